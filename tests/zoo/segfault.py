"""Dereferences a null pointer through ctypes at call time: the worker dies with SIGSEGV.

TASK: Math/zoo_scale_add
EXPECT: crashed
"""

import ctypes


def scale_add(input, other):
    ctypes.string_at(0)
    return input * 2 + other
