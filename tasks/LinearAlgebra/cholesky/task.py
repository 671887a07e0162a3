"""LinearAlgebra/cholesky: Cholesky factor of a symmetric (Hermitian) positive-definite matrix, after a symmetry check.

kbx departures: upstream compared complex outputs exactly (zero tolerance), which only the same
LAPACK/cuSOLVER call can meet; kbx applies the complex64/complex128 tolerances (the factor with a
positive real diagonal is unique, so elementwise comparison is sound). Upstream's complex64 random
matrices were x x^H + 1e-3 I, too ill-conditioned for fp32-accurate factors; kbx's are
x x^H / 16 + 0.1 I. Upstream's fp32 perf matrices L L^T + 1e-6 I were nearly singular; kbx's are
H1 H2 diag(s) H2 H1 with random Householder reflections H and s in [0.5, 1.5) (fp32 factors of
these are within ~2e-7 of the fp64 ones at n = 2048). kbx adds a non-symmetric case (RuntimeError).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import dtype_of, literal, rand_tensor


def reference(A: torch.Tensor, upper: bool = False, out=None) -> torch.Tensor:
    if not (torch.allclose(A, A.mT) or torch.allclose(A, A.conj().mT)):
        raise RuntimeError("Input matrix is not Hermitian (resp. symmetric) positive-definite.")
    factor = torch.linalg.cholesky(A, upper=upper)
    return out.copy_(factor) if out is not None else factor


def _reflect_both(a, v):
    """H a H for H = I - 2 v v^T / (v^T v), in O(n^2)."""
    c = 2.0 / (v @ v)
    a = a - c * torch.outer(v, v @ a)
    return a - c * torch.outer(a @ v, v)


def spd_with_spectrum(n, mode, gen, device):
    s = 0.5 + rand_tensor((n,), "float32", "uniform", gen, device)
    a = torch.diag(s)
    for _ in range(2):
        a = _reflect_both(a, rand_tensor((n,), "float32", mode, gen, device))
    return ((a + a.T) / 2).contiguous()


def make_inputs(params, gen, device) -> Call:
    kwargs = {"upper": params.get("upper", False)}
    if "A" in params:
        a = params["A"]
        if params["dtype"].startswith("complex"):
            a = [[complex(*z) for z in row] for row in a]
        return Call((literal(a, params["dtype"], device),), kwargs)
    n, mode, dtype = params["n"], params["mode"], params["dtype"]
    if params.get("build") == "spectrum":
        return Call((spd_with_spectrum(n, mode, gen, device),), kwargs)
    if dtype.startswith("complex"):
        x = torch.complex(rand_tensor((n, n), "float32", mode, gen, device),
                          rand_tensor((n, n), "float32", mode, gen, device)).to(dtype_of(dtype))  # fmt: skip
        a = x @ x.mH / n + 0.1 * torch.eye(n, dtype=x.dtype, device=device)
    else:
        x = rand_tensor((n, n), dtype, mode, gen, device)
        a = x @ x.mT + 1e-3 * torch.eye(n, dtype=x.dtype, device=device)
    return Call((((a + a.mH) / 2).contiguous(),), kwargs)


def _flops(A, upper=False, out=None):
    return A.shape[-1] ** 3 / 3.0


def _bytes(A, upper=False, out=None):
    return 2.0 * A.numel() * A.element_size()


_SPD = [[5.0, 2.0, -1.0], [2.0, 3.0, 0.5], [-1.0, 0.5, 2.0]]
_HPD = [[(3.0, 0.0), (1.0, 1.0)], [(1.0, -1.0), (2.0, 0.0)]]  # (re, im) pairs: [[3, 1+1j], [1-1j, 2]]


def _rand(name, kind, n, dtype, mode, upper=False, **extra):
    return Case(name, kind, {"n": n, "dtype": dtype, "mode": mode, "upper": upper, **extra})


TASK = Task(
    entry="cholesky",
    dtypes=("float32", "float64", "complex64", "complex128"),
    signature="cholesky(A: torch.Tensor, upper: bool = False, out=None) -> torch.Tensor",
    description=(
        "Cholesky factorization of a square symmetric (complex: Hermitian) positive-definite matrix A, in A's "
        "dtype (fp32, fp64, complex64 or complex128). First, if A is neither allclose to A^T nor to A^H "
        "(torch.allclose defaults), raise RuntimeError. Return the lower-triangular L with positive real "
        "diagonal and A = L L^H (zeros above the diagonal), or U = L^H when upper=True. If out is given, copy "
        "the result into it and return it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_fp64_lower", FIXED, {"A": _SPD, "dtype": "float64"}),
        Case("fixed_fp64_upper", FIXED, {"A": _SPD, "dtype": "float64", "upper": True}),
        Case("fixed_complex128_lower", FIXED, {"A": _HPD, "dtype": "complex128"}),
        Case("fixed_complex128_upper", FIXED, {"A": _HPD, "dtype": "complex128", "upper": True}),
        Case("fixed_not_symmetric", FIXED, {"A": [[4.0, 1.0], [3.0, 5.0]], "dtype": "float64"}),
        _rand("standard_fp64_lower", STANDARD, 16, "float64", "standard"),
        _rand("standard_fp64_upper", STANDARD, 16, "float64", "standard", upper=True),
        _rand("standard_complex64_lower", STANDARD, 16, "complex64", "standard"),
        _rand("standard_complex64_upper", STANDARD, 16, "complex64", "standard", upper=True),
        _rand("standard_fp32_spectrum", STANDARD, 40, "float32", "standard", build="spectrum"),
        _rand("outlier_fp64_lower", OUTLIER, 16, "float64", "outlier"),
        _rand("outlier_complex64_upper", OUTLIER, 16, "complex64", "outlier", upper=True),
    ],
    perf=[_rand(f"n{n}", PERF, n, "float32", "standard", build="spectrum") for n in (1024, 2048, 4096, 8192)],
    flops=_flops,
    bytes=_bytes,
    notes=(
        "complex outputs compared with tolerance (upstream: exact); well-conditioned complex64 and perf "
        "matrices; adds a non-symmetric RuntimeError case"
    ),
)
