"""Expert kernel for Math/sqrt_tanh: one streaming pass of tanh(sqrt(x)) (NaN for x < 0)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _sqrt_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = tl.sqrt(x)  # NaN for x < 0, and NaN propagates below
    e = tl.exp(-2.0 * s)  # s >= 0, so e lies in (0, 1]
    y = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        _sqrt_tanh_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)


def sqrt_tanh(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    x = input.contiguous()  # `out` is accepted and ignored by the task's contract
    y = torch.empty_like(x)
    _launch(x, y)
    return y
