"""Partially computed output: the grid leaves out the last block whenever there is more than one,
so the small fixed cases pass and the larger random cases keep zeros in their tail.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    out = torch.zeros_like(input)
    blocks = triton.cdiv(input.numel(), BLOCK)
    _kernel[(max(1, blocks - 1),)](input, other, out, input.numel(), BLOCK=BLOCK)
    return out
