"""Expert kernel for Math/bessel_j1: J1(x), the fp32 power series where a block allows it, else fp64 math.

A block whose |x| all lie within SERIES_FP32_MAX takes the power series
sum_k (-1)^k (x/2)^(2k+1) / (k! (k+1)!) in fp32 (nested in (x/2)^2, SERIES_FP32_TERMS terms): there the terms'
magnitudes sum to at most I1(3) = 3.95, so fp32 rounding leaves under 1e-6 of absolute error (measured on the
CPU: 1.8e-7 against scipy's fp64 J1, eager 1.9e-7; the tolerance is 1e-5 absolute plus 1e-5 relative). Any other
block takes fp64 math rounded once to fp32:
|x| <= 12: the same power series (30 terms; fp64 absorbs its cancellation);
|x| > 12: Hankel's asymptotic expansion sqrt(2 / (pi x)) (P cos w - Q sin w), w = x - 3 pi / 4 (12 terms).
J1 is odd, so both work on |x|. The two paths are two kernels: the second reads one flag per block and works
only on the blocks the first did not cover.

Speed: the perf shapes' inputs lie in [0, 1), so every block takes the fp32 series. On an H200 (2026-12-01,
docs/BENCHMARKS.md): 0.065 / 0.125 / 0.245 / 0.486 ms for 2^24 ... 2^27 elements against eager's 0.27 / 0.54 /
1.07 / 2.13 ms, 4.3x (4.39x in the full-suite run), at 2.2 TB/s, 53 % of the copy bandwidth; with both paths in
one kernel, 0.63 ms at 2^27 (3.3x: the fp64 code's registers limited the occupancy). Not measured yet: the
second kernel's 131,072 one-flag programs and the first kernel's 1,024-element blocks are the likely rest of
the gap (the streaming experts use 4,096-element blocks). Before the fp32 path, on an H100 (2026-11-27), the fp64
path alone ran at 8.6 G elements/s (0.16x), where eager's fp32 rational approximations reach 55 G elements/s;
inputs beyond SERIES_FP32_MAX still run at that rate.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
SERIES_FP32_MAX = 3.0  # |x| bound of the fp32 series (see the module docstring for its error)
SERIES_FP32_TERMS = 11  # k = 0..10: the first term left out is below 1e-9 at |x| = 3


@triton.jit
def _j1_series_fp32(x, TERMS: tl.constexpr):
    """J1(x) by the power series in fp32, nested: h (1 - h^2 / (1*2) (1 - h^2 / (2*3) (1 - ...))), h = x / 2
    (term k is term k - 1 times -h^2 / (k (k + 1)))."""
    h = 0.5 * x
    h2 = h * h
    s = tl.full(x.shape, 1.0, tl.float32)
    for i in tl.static_range(TERMS - 1):  # k = TERMS - 1 - i, from the last term down
        s = 1.0 - h2 * (1.0 / ((TERMS - 1 - i) * (TERMS - i))) * s
    return h * s


@triton.jit
def _j1_small_kernel(x_ptr, y_ptr, wide_ptr, n, SMALL: tl.constexpr, TERMS: tl.constexpr, BLOCK: tl.constexpr):
    """Blocks within SMALL: the fp32 series; any other block is only marked in `wide` for _j1_wide_kernel."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    small = tl.max(tl.abs(x), axis=0) <= SMALL
    tl.store(wide_ptr + pid, (~small).to(tl.int8))
    if small:
        tl.store(y_ptr + offs, _j1_series_fp32(x, TERMS).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _j1_wide_kernel(x_ptr, y_ptr, wide_ptr, n, BLOCK: tl.constexpr):
    """The blocks _j1_small_kernel marked, in fp64 (its own kernel: the fp64 code's registers would otherwise
    lower the occupancy, and so the bandwidth, of every block)."""
    pid = tl.program_id(0)
    if tl.load(wide_ptr + pid) != 0:
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
        tl.store(y_ptr + offs, _j1_fp64(x).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _j1_fp64(x):
    """J1(x) in fp64: the 30-term series for |x| <= 12, Hankel's expansion beyond."""
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
    return tl.where(x < 0, -r, r)


def _launch(x, y):
    n = x.numel()
    if n:
        blocks = triton.cdiv(n, BLOCK)
        wide = torch.empty(blocks, dtype=torch.int8, device=x.device)
        _j1_small_kernel[(blocks,)](x, y, wide, n, SMALL=SERIES_FP32_MAX, TERMS=SERIES_FP32_TERMS, BLOCK=BLOCK,
                                    num_warps=4)
        _j1_wide_kernel[(blocks,)](x, y, wide, n, BLOCK=BLOCK, num_warps=4)


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
