"""Precision downgrade: loads fp32, computes and rounds in fp16, stores back as fp32. The dtype is
right but the values are off by fp16 rounding, far outside fp32 tolerance.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float16)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float16)
    tl.store(out_ptr + offs, (x * 2.0 + y).to(tl.float32), mask=mask)


def scale_add(input, other):
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    return out
