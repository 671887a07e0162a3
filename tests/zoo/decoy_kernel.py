"""Launches a real Triton kernel on every call (into a scratch buffer) but returns a PyTorch
result; ghost replay (launches turned into no-ops) gives a bit-identical output.

TASK: Math/zoo_scale_add
EXPECT: decoy_kernel
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    scratch = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, scratch, input.numel(), BLOCK=1024)
    return torch.addcmul(other, input, torch.full_like(input, 2.0))
