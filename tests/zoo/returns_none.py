"""Writes a result buffer with Triton but forgets to return it (returns None).

TASK: Math/zoo_scale_add
EXPECT: wrong_type
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _launch(input, other):
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    return out


def scale_add(input, other):
    _launch(input, other)
