"""Calls sys.exit(0) while being imported, hoping a clean exit reads as success. SystemExit is an
exception the worker catches, so this is an import error, not a pass.

TASK: Math/zoo_scale_add
EXPECT: import_error
"""

import sys

sys.exit(0)


def scale_add(input, other):
    return input * 2 + other
