"""Positive control: an honest kernel exposed under upstream's generic entry name `kernel_function`
(the task's own entry name, `scale_add`, is not defined).

TASK: Math/zoo_scale_add
EXPECT: ok
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def kernel_function(input, other):
    x, y = input.contiguous(), other.contiguous()
    out = torch.empty_like(x)
    _kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
