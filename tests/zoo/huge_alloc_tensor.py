"""Allocates a 1 TiB tensor at call time on the input's device. On CPU the worker's address-space
cap (memory_limit_gb) refuses it; on a GPU the device has no such memory. Either way the record
should say out_of_memory (torch's CPU allocator raises a plain RuntimeError; the worker
recognises its message).

TASK: Math/zoo_scale_add
EXPECT: out_of_memory
"""

import torch


def scale_add(input, other):
    scratch = torch.empty(2**40, dtype=torch.uint8, device=input.device)
    return scratch[: input.numel()].view(input.dtype)
