"""LinearAlgebra/solve: X with A X = B for a square fp32 A and a vector or matrix right-hand side.

Departures from upstream: upstream's random systems were fp64 (x + 3I, which can be nearly
singular) and its perf matrices randn + nI (trivially diagonal); kbx's random and perf matrices are
fp32 I + randn / (2 sqrt n) with rows randomly permuted: well conditioned, so fp32 results are
meaningful, while the permutation forces row pivoting. Upstream compared torch's exact error-message
strings for the singular and non-square cases; kbx compares the exception type, and its reference
raises a plain RuntimeError for both (torch raises a private RuntimeError subclass when singular).
fp32 rtol/atol 1e-4 (see the tolerance comment).
"""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    if A.dim() != 2 or A.shape[0] != A.shape[1]:
        raise RuntimeError(f"solve: A must be a square matrix, got shape {tuple(A.shape)}")
    try:
        return torch.linalg.solve(A, B)
    except RuntimeError as exc:  # torch's singular-matrix error is a private subclass; report the base type
        raise RuntimeError(str(exc)) from None


def well_conditioned(n, mode, gen, device):
    # 2% outliers (upstream det's setting) so that even small outlier cases contain some
    g = rand_tensor((n, n), "float32", mode, gen, device, outlier_prob=0.02)
    a = torch.eye(n, dtype=torch.float32, device=device) + g * (0.5 / math.sqrt(n))
    return a[torch.randperm(n, generator=gen, device=device)].contiguous()


def make_inputs(params, gen, device) -> Call:
    if "A" in params:
        return Call((literal(params["A"], "float32", device), literal(params["B"], "float32", device)))
    n, k = params["n"], params.get("k")
    a = well_conditioned(n, params["mode"], gen, device)
    b = rand_tensor((n,) if k is None else (n, k), "float32", params.get("b_mode", params["mode"]), gen, device)
    return Call((a, b))


def _flops(A, B):
    n = A.shape[-1]
    k = 1 if B.dim() == 1 else B.shape[-1]
    return 2.0 / 3.0 * n**3 + 2.0 * n * n * k


def _bytes(A, B):
    return float((A.numel() + 2 * B.numel()) * A.element_size())


TASK = Task(
    entry="solve",
    dtypes=("float32",),
    signature="solve(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor",
    description=(
        "Solve the linear system A X = B for X, where A is a square fp32 matrix (n, n) and B is fp32 of shape "
        "(n,) or (n, k); return X with B's shape (e.g. LU factorization with partial row pivoting, then "
        "forward and back substitution). If A is not a square 2-D matrix, or is exactly singular (a zero "
        "pivot), raise RuntimeError (exactly that type)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED, {"A": [[3.0, 1.0], [1.0, 2.0]], "B": [9.0, 8.0]}),
        Case("fixed_3x3_pivot", FIXED, {"A": [[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]],
                                        "B": [6.0, 4.0, 3.0]}),  # fmt: skip
        Case("fixed_singular", FIXED, {"A": [[1.0, 2.0], [2.0, 4.0]], "B": [5.0, 10.0]}),
        Case("fixed_not_square", FIXED, {"A": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "B": [7.0, 8.0]}),
        Case("standard_n8_vector", STANDARD, {"n": 8, "mode": "standard"}),
        Case("standard_n16_vector", STANDARD, {"n": 16, "mode": "standard"}),
        Case("standard_n8_matrix", STANDARD, {"n": 8, "k": 4, "mode": "standard"}),
        Case("standard_n16_matrix", STANDARD, {"n": 16, "k": 4, "mode": "standard"}),
        Case("outlier_n16_vector", OUTLIER, {"n": 16, "mode": "outlier"}),
        Case("outlier_n16_matrix", OUTLIER, {"n": 16, "k": 4, "mode": "outlier"}),
    ],
    perf=[Case(f"n{n}", PERF, {"n": n, "k": 1, "mode": "standard"}) for n in (512, 1024, 2048, 4096)],
    flops=_flops,
    bytes=_bytes,
    # An honest fp32 LU solve of a 512x512 system carries relative errors of order 1e-5 (pivot
    # products and summation order), so the default 1e-5 would fail correct kernels.
    tolerance=Tolerance(atol={"float32": 1e-4}, rtol={"float32": 1e-4}),
    notes=(
        "well-conditioned permuted fp32 systems (upstream: fp64 x+3I, perf randn+nI); errors compared by type "
        "(RuntimeError), not torch's message; fp32 atol/rtol 1e-4"
    ),
)
