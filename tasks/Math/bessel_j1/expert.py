"""Expert kernel for Math/bessel_j1: J1(x) in one elementwise pass, fp64 math rounded once to fp32.

|x| <= 12: the power series sum_k (-1)^k (x/2)^(2k+1) / (k! (k+1)!) (30 terms; fp64 absorbs its cancellation);
|x| > 12: Hankel's asymptotic expansion sqrt(2 / (pi x)) (P cos w - Q sin w), w = x - 3 pi / 4 (12 terms).
J1 is odd, so both work on |x|.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 1.99 / 3.93 / 7.84 / 15.6 ms for 2^24 ... 2^27 elements against
eager's 0.32 / 0.62 / 1.23 / 2.44 ms, 0.16x. Compute-bound on fp64: the 30-term power series (and 12-term
Hankel expansion) runs in fp64 to absorb its cancellation, at 8.6 G elements/s, where eager's cephes-style
fp32 rational approximations reach 55 G elements/s (440 GB/s, itself compute-bound). An fp32 minimax
approximation per interval would need a new accuracy analysis.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _j1_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    a = tl.abs(x)
    # power series (used for a <= 12)
    h = 0.5 * tl.minimum(a, 12.0)
    h2 = h * h
    t = h
    series = h
    for k in tl.static_range(1, 31):
        t = -t * h2 / (k * (k + 1.0))
        series += t
    # Hankel expansion (used for a > 12): c_k = c_{k-1} (4 - (2k - 1)^2) / (8 k a)
    b = tl.maximum(a, 12.0)
    c = tl.full(x.shape, 1.0, tl.float64)
    p = c
    q = tl.zeros_like(c)
    for k in tl.static_range(1, 13):
        c = c * (4.0 - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (8.0 * k * b)
        sign = 1.0 - 2.0 * ((k // 2) % 2)  # P = c0 - c2 + c4 ..., Q = c1 - c3 + c5 ...
        if k % 2 == 0:
            p += sign * c
        else:
            q += sign * c
    w = b - 2.356194490192345
    asym = tl.sqrt(0.6366197723675814 / b) * (p * tl.cos(w) - q * tl.sin(w))
    r = tl.where(a <= 12.0, series, asym)
    r = tl.where(x < 0, -r, r)
    tl.store(y_ptr + offs, r.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        _j1_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=4)


def bessel_j1(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
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
