"""Expert kernel for Math/digamma: psi(x) in one elementwise pass, fp32 math (recurrence + asymptotic series)."""

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _digamma_pos(x):
    """psi(x) for x > 0: recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 6, then the asymptotic series."""
    r = tl.zeros_like(x)
    for _ in tl.static_range(6):
        small = x < 6.0
        r = tl.where(small, r - 1.0 / x, r)
        x = tl.where(small, x + 1.0, x)
    inv = 1.0 / x
    z = inv * inv
    tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))))
    return r + tl.log(x) - 0.5 * inv - tail


@triton.jit
def _digamma(x):
    """psi(x) for any x: reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0; psi(0) = -inf,
    NaN at negative integers (as torch)."""
    neg = x < 0.0
    y = tl.where(neg, 1.0 - x, tl.where(x == 0.0, 1.0, x))
    r = _digamma_pos(y)
    frac = x - tl.floor(x)  # reduce before multiplying by pi, for an accurate cot near large |x|
    pix = 3.141592653589793 * frac
    r = tl.where(neg, r - 3.141592653589793 * tl.cos(pix) / tl.sin(pix), r)
    r = tl.where(neg & (x == tl.floor(x)), float("nan"), r)
    r = tl.where(x == 0.0, float("-inf"), r)
    return r


@triton.jit
def _digamma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    tl.store(y_ptr + offs, _digamma(x).to(y_ptr.dtype.element_ty), mask=mask)


def digamma(input_tensor: torch.Tensor) -> torch.Tensor:
    x = input_tensor.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _digamma_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
    return y
