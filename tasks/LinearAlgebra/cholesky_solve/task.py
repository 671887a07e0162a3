"""LinearAlgebra/cholesky_solve: X with A X = B given A's Cholesky factor (lower L or upper U), batched.

Departures from upstream: upstream's random factors came from fp64 Cholesky of x x^T + 1e-3 I
(condition numbers up to ~1e6 with outliers) and its perf factors were tril(rand) + 1e-3 I, whose
triangular solves overflow for large n; kbx builds fp32 factors directly as a unit-scale diagonal
(1 to 2) plus a small random strict lower triangle (0.25 randn / sqrt n), i.e. the Cholesky factor of
a well-conditioned SPD matrix, without calling a factorization in input generation. fp32
rtol/atol 1e-4 (see the tolerance comment).
"""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(B: torch.Tensor, L: torch.Tensor, upper: bool = False, out=None) -> torch.Tensor:
    x = torch.cholesky_solve(B, L, upper=upper)
    if out is not None:
        return out.copy_(x)
    return x


def random_factor(batch, n, mode, gen, device):
    """A lower-triangular Cholesky-like factor: diagonal in [1, 2), small off-diagonal entries."""
    shape = (*batch, n, n)
    # 2% outliers (upstream det's setting) so that even small outlier cases contain some
    g = rand_tensor(shape, "float32", mode, gen, device, outlier_prob=0.02)
    off = torch.tril(g, diagonal=-1) * (0.25 / math.sqrt(n))
    diag = 1.0 + rand_tensor((*batch, n), "float32", "uniform", gen, device)
    return off + torch.diag_embed(diag)


def make_inputs(params, gen, device) -> Call:
    upper = params.get("upper", False)
    if "L" in params:
        b, f = literal(params["B"], "float32", device), literal(params["L"], "float32", device)
    else:
        batch, n, k = params["batch"], params["n"], params["k"]
        f = random_factor(batch, n, params["mode"], gen, device)
        if upper:
            f = f.mT.contiguous()
        b = rand_tensor((*batch, n, k), "float32", params["mode"], gen, device)
    return Call((b, f), {"upper": upper})


def _flops(B, L, upper=False, out=None):
    n, k = B.shape[-2], B.shape[-1]
    return 2.0 * n * n * k * (B.numel() // (n * k))


def _bytes(B, L, upper=False, out=None):
    return float((2 * B.numel() + L.numel()) * B.element_size())


_B = [[1.0], [2.0]]
_L1, _L2 = [[2.0, 0.0], [1.0, 1.0]], [[3.0, 0.0], [1.0, 2.0]]
_U1, _U2 = [[2.0, 1.0], [0.0, 1.0]], [[3.0, 1.0], [0.0, 2.0]]

TASK = Task(
    entry="cholesky_solve",
    dtypes=("float32",),
    signature="cholesky_solve(B: torch.Tensor, L: torch.Tensor, upper: bool = False, out=None) -> torch.Tensor",
    description=(
        "Solve A X = B given the Cholesky factor of the symmetric positive-definite A, as torch.cholesky_solve: "
        "with upper=False, L is lower triangular and A = L L^T; with upper=True, L holds an upper-triangular U "
        "and A = U^T U (only the named triangle is read). B is fp32 (..., n, k), L fp32 (..., n, n), leading "
        "batch dims broadcast; return X of B's shape (two triangular solves). If out is given, copy the result "
        "into it and return it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_lower", FIXED, {"B": _B, "L": _L1}),
        Case("fixed_upper", FIXED, {"B": _B, "L": _U1, "upper": True}),
        Case("fixed_batch_lower", FIXED, {"B": [_B, _B], "L": [_L1, _L2]}),
        Case("fixed_batch_upper", FIXED, {"B": [_B, _B], "L": [_U1, _U2], "upper": True}),
        Case("standard_1x16x8_lower", STANDARD, {"batch": (1,), "n": 16, "k": 8, "mode": "standard"}),
        Case("standard_1x16x8_upper", STANDARD, {"batch": (1,), "n": 16, "k": 8, "mode": "standard", "upper": True}),
        Case("standard_4x8x4_lower", STANDARD, {"batch": (4,), "n": 8, "k": 4, "mode": "standard"}),
        Case("standard_4x8x4_upper", STANDARD, {"batch": (4,), "n": 8, "k": 4, "mode": "standard", "upper": True}),
        Case("outlier_1x16x8_lower", OUTLIER, {"batch": (1,), "n": 16, "k": 8, "mode": "outlier"}),
        Case("outlier_4x8x4_upper", OUTLIER, {"batch": (4,), "n": 8, "k": 4, "mode": "outlier", "upper": True}),
    ],
    perf=[Case(f"n{n}", PERF, {"batch": (), "n": n, "k": 10, "mode": "standard"}) for n in (2048, 4096, 8192, 16384)],
    flops=_flops,
    bytes=_bytes,
    # Two triangular solves of size 2048 in fp32 accumulate rounding of order 1e-5 relative
    # (summation order differs between kernels), so the default 1e-5 would fail correct kernels.
    tolerance=Tolerance(atol={"float32": 1e-4}, rtol={"float32": 1e-4}),
    notes=(
        "fp32 well-conditioned factors built directly (upstream: fp64 random, ill-conditioned perf factors "
        "tril(rand)+1e-3 I); fp32 atol/rtol 1e-4"
    ),
)
