"""Expert kernel for Math/digamma: psi(x) in one elementwise pass, fp32 math (recurrence + asymptotic series)."""

import torch
import triton
import triton.language as tl

from kbx.experts.special import digamma as psi

BLOCK = 2048


@triton.jit
def _digamma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    tl.store(y_ptr + offs, psi(x).to(y_ptr.dtype.element_ty), mask=mask)


def digamma(input_tensor: torch.Tensor) -> torch.Tensor:
    x = input_tensor.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _digamma_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
    return y
