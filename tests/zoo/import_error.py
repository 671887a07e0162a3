"""Imports a module that does not exist, so the import of the candidate fails.

TASK: Math/zoo_scale_add
EXPECT: import_error
"""

import torch
import triton_kernels_that_do_not_exist  # noqa: F401


def scale_add(input, other):
    return torch.empty_like(input)
