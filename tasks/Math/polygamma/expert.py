"""Expert kernel for Math/polygamma: one elementwise pass in fp32.

n = 0 is digamma (recurrence + asymptotic series); n >= 1 uses psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x), with the
Hurwitz zeta summed as nine direct terms plus the Euler-Maclaurin remainder (cephes' scheme, which torch uses).
Inputs are positive here; x <= 0 gives NaN for n >= 1 (inf at non-positive integers).

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.045 / 0.086 / 0.165 / 0.321 ms
at n = 2^24 ... 2^27 against eager's 0.115 / 0.225 / 0.443 / 0.881 ms (torch.special.polygamma; order 1 runs
PyTorch's trigamma kernel), 2.6x, through its own trigamma (kbx/experts/special.py); the Hurwitz zeta of any order
(10 general powers, 13 divisions per element) gave 0.35x. Why eager's trigamma is slower was not profiled.
"""

import math

import torch
import triton
import triton.language as tl

from kbx.experts.special import digamma, hurwitz_zeta, trigamma

BLOCK = 1024


@triton.jit
def _polygamma_kernel(x_ptr, y_ptr, n, order, factor, ORDER: tl.constexpr, BLOCK: tl.constexpr):
    """ORDER: 0 (digamma), 1 (trigamma, its own recurrence as torch's trigamma kernel) or -1 (any other order)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    if ORDER == 0:
        y = digamma(x)
    elif ORDER == 1:
        y = trigamma(x)
    else:
        s = tl.zeros_like(x) + order + 1.0
        z = hurwitz_zeta(s, tl.where(x > 0.0, x, 1.0))
        y = factor * z
        y = tl.where(x > 0.0, y, float("nan"))
        y = tl.where((x <= 0.0) & (x == tl.floor(x)), float("inf"), y)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def polygamma(n, input, *, out=None):
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError("n must be a non-negative integer.")
    x = torch.as_tensor(input).contiguous()
    y = torch.empty_like(x)
    numel = x.numel()
    if numel:
        factor = float((-1) ** (n + 1) * math.factorial(n))
        _polygamma_kernel[(triton.cdiv(numel, BLOCK),)](x, y, numel, float(n), factor, ORDER=n if n < 2 else -1,
                                                        BLOCK=BLOCK, num_warps=4)  # fmt: skip
    if out is not None:
        out.copy_(y)
    return y
