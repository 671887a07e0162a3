"""Exits with kbx's own internal-error code (70, kbx.sandbox.zygote.CHILD_INTERNAL_ERROR) while being
imported, as if kbx's machinery had failed: a candidate must not pass for a harness fault, which is
redone and left out of the rates. Once the worker has said it imports the candidate, an exit is
the candidate's.

TASK: Math/zoo_scale_add
EXPECT: crashed
"""

import os

os._exit(70)


def scale_add(input, other):
    return input * 2 + other
