"""Expert kernel for Math/rsqrt: one streaming pass, fp32 math."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _rsqrt_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 1.0 / tl.sqrt(x)  # 0 -> +inf, negative -> nan
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        _rsqrt_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)


def rsqrt(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.is_contiguous() and out.shape == x.shape and out.dtype == x.dtype:
        _launch(x, out)
        return out
    y = torch.empty_like(x)
    _launch(x, y)
    if out is not None:
        out.resize_(y.shape).copy_(y)
        return out
    return y
