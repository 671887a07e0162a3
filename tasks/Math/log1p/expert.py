"""Expert kernel for Math/log1p: one streaming pass of ln(1 + x), with the rounding of 1 + x corrected."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _log1p_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    u = 1.0 + x
    # ln(u) * x / (u - 1) cancels the rounding error of u = 1 + x (Goldberg's trick);
    # where u rounds to 1, ln(1 + x) = x to fp32 precision.
    d = u - 1.0
    y = tl.where(d == 0.0, x, tl.log(u) * (x / tl.where(d == 0.0, 1.0, d)))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        _log1p_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)


def log1p(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.is_contiguous() and out.shape == x.shape and out.dtype == x.dtype:
        _launch(x, out)
        return out
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _launch(x, y)
    if out is not None:
        out.resize_(y.shape).copy_(y)
        return out
    return y
