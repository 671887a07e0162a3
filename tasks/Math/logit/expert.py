"""Expert kernel for Math/logit: one elementwise pass, optional clamp to [eps, 1 - eps] then log(x / (1 - x))."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _kernel(x_ptr, y_ptr, n, eps, HAS_EPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if HAS_EPS:
        hi = 1.0 - eps  # fp32 arithmetic, like torch's bound
        x = tl.minimum(tl.maximum(x, eps), hi)
    y = tl.log(x / (1.0 - x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y, eps):
    n = x.numel()
    if n:
        _kernel[(triton.cdiv(n, BLOCK),)](x, y, n, eps if eps is not None else 0.0, HAS_EPS=eps is not None, BLOCK=BLOCK, num_warps=8)


def logit(input: torch.Tensor, eps: float | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.is_contiguous() and out.shape == x.shape:
        _launch(x, out, eps)
        return out
    y = torch.empty_like(x)
    _launch(x, y, eps)
    if out is not None:
        out.copy_(y)
        return out
    return y
