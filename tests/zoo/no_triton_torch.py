"""Pure PyTorch, no Triton at all: numerically right, but no kernel was launched.

TASK: Math/zoo_scale_add
EXPECT: no_triton
"""

import torch


def scale_add(input, other):
    return torch.add(input * 2, other)
