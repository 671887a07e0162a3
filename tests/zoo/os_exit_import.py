"""Calls os._exit(0) while being imported: the worker process vanishes with exit code 0 before it
reports anything. A silent clean exit is a crash, not a pass.

TASK: Math/zoo_scale_add
EXPECT: crashed
"""

import os

os._exit(0)


def scale_add(input, other):
    return input * 2 + other
