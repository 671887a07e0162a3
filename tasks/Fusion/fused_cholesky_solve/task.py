"""Fusion/fused_cholesky_solve: x = A^-1 b for symmetric positive-definite fp32 A via its Cholesky factor.

Departures from upstream: upstream factored A with torch.cholesky, which newer torch releases have
removed; kbx's reference uses torch.linalg.cholesky (the same lower factor) and torch.cholesky_solve
(the two triangular solves). Upstream's random systems were x x^T + 0.01 I (condition numbers up to
~1e6, more with outliers), so fp32 results were not meaningful; kbx's random and perf matrices are
x x^T / n + I (eigenvalues between 1 and ~5), symmetrised exactly. fp32 atol/rtol 1e-4 (see the
tolerance comment).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cholesky_solve(b, torch.linalg.cholesky(A))


def make_inputs(params, gen, device) -> Call:
    if "A" in params:
        return Call((literal(params["A"], "float32", device), literal(params["b"], "float32", device)))
    n, k, mode = params["n"], params["k"], params["mode"]
    x = rand_tensor((n, n), "float32", mode, gen, device)
    a = x @ x.T / n
    a = (a + a.T) / 2 + torch.eye(n, dtype=torch.float32, device=device)
    b = rand_tensor((n, k), "float32", mode, gen, device)
    return Call((a.contiguous(), b))


def _flops(A, b):
    n = A.shape[-1]
    return n**3 / 3.0 + 2.0 * n * n * b.shape[-1]


def _bytes(A, b):
    return float((A.numel() + 2 * b.numel()) * A.element_size())


TASK = Task(
    entry="fused_cholesky_solve",
    dtypes=("float32",),
    signature="fused_cholesky_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description=(
        "Solve A x = b for a symmetric positive-definite fp32 matrix A (n, n) and fp32 right-hand sides b (n, k): "
        "factor A = L L^T with L lower triangular (Cholesky), solve L y = b, then L^T x = y, and return x "
        "(fp32, shape (n, k))."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED, {"A": [[4.0, 1.0], [1.0, 3.0]], "b": [[1.0], [2.0]]}),
        Case("fixed_3x3", FIXED, {"A": [[6.0, 2.0, 1.0], [2.0, 5.0, 2.0], [1.0, 2.0, 4.0]],
                                  "b": [[1.0], [2.0], [3.0]]}),  # fmt: skip
        Case("fixed_2x2_two_rhs", FIXED, {"A": [[5.0, 2.0], [2.0, 3.0]], "b": [[1.0, 2.0], [3.0, 4.0]]}),
        Case("fixed_3x3_two_rhs", FIXED, {"A": [[7.0, 3.0, 1.0], [3.0, 6.0, 2.0], [1.0, 2.0, 5.0]],
                                          "b": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}),  # fmt: skip
        Case("standard_n64", STANDARD, {"n": 64, "k": 8, "mode": "standard"}),
        Case("outlier_n64", OUTLIER, {"n": 64, "k": 8, "mode": "outlier"}),
    ],
    perf=[Case(f"n{n}", PERF, {"n": n, "k": 1, "mode": "standard"}) for n in (1024, 2048, 4096, 8192)],
    flops=_flops,
    bytes=_bytes,
    # An honest fp32 Cholesky solve of size 1024 accumulates rounding of order 1e-5 relative
    # (summation order differs between kernels), so the default 1e-5 would fail correct kernels.
    tolerance=Tolerance(atol={"float32": 1e-4}, rtol={"float32": 1e-4}),
    notes=(
        "torch.cholesky (removed) replaced by torch.linalg.cholesky + cholesky_solve; well-conditioned "
        "x x^T/n + I systems (upstream: x x^T + 0.01 I); fp32 atol/rtol 1e-4"
    ),
)
