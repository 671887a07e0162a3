"""MatrixMultiply/tril_mm_and_scale: beta * (alpha * (tril(A) @ B)) for fp32 matrices."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    return beta * (alpha * torch.matmul(torch.tril(A), B))


def make_inputs(params, gen, device) -> Call:
    if "A" in params:
        a, b = literal(params["A"], "float32", device), literal(params["B"], "float32", device)
    else:
        n, p = params["n"], params["p"]
        a = rand_tensor((n, n), "float32", params["mode"], gen, device)
        b = rand_tensor((n, p), "float32", params["mode"], gen, device)
    return Call((a, b, params["alpha"], params["beta"]))


def _flops(A, B, alpha, beta):
    n, p = A.shape[0], B.shape[1]
    return 2.0 * n * n * p + 2.0 * n * p


def _bytes(A, B, alpha, beta):
    n, p = A.shape[0], B.shape[1]
    return float((n * n + 2 * n * p) * A.element_size())


TASK = Task(
    entry="tril_mm_and_scale",
    dtypes=("float32",),
    signature="tril_mm_and_scale(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float) -> torch.Tensor",
    description=(
        "For an fp32 square matrix A of shape (n, n) and B of shape (n, p), return beta * (alpha * (L @ B)) "
        "where L is the lower triangle of A including its diagonal (entries above the diagonal treated as "
        "zero). The result is fp32 of shape (n, p)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED,
             {"A": [[1.0, 2.0], [3.0, 4.0]], "B": [[5.0, 6.0], [7.0, 8.0]], "alpha": 1.0, "beta": 1.0}),  # fmt: skip
        Case("fixed_scaled", FIXED,
             {"A": [[1.0, 0.0], [3.0, 4.0]], "B": [[2.0, 3.0], [4.0, 5.0]], "alpha": 0.5, "beta": 2.0}),  # fmt: skip
        Case("fixed_3x3", FIXED, {"A": [[1.0, 0.0, 0.0], [2.0, 3.0, 0.0], [4.0, 5.0, 6.0]],
                                  "B": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "alpha": 1.0, "beta": 1.0}),  # fmt: skip
        Case("fixed_zeros", FIXED,
             {"A": [[0.0, 0.0], [0.0, 0.0]], "B": [[1.0, 2.0], [3.0, 4.0]], "alpha": 1.0, "beta": 1.0}),  # fmt: skip
        Case("standard_64x32", STANDARD, {"n": 64, "p": 32, "mode": "standard", "alpha": 1.0, "beta": 0.5}),
        Case("standard_128x16", STANDARD, {"n": 128, "p": 16, "mode": "standard", "alpha": 1.0, "beta": 0.5}),
        Case("outlier_64x32", OUTLIER, {"n": 64, "p": 32, "mode": "outlier", "alpha": 1.0, "beta": 0.5}),
        Case("outlier_128x16", OUTLIER, {"n": 128, "p": 16, "mode": "outlier", "alpha": 1.0, "beta": 0.5}),
    ],
    perf=[
        Case(f"n{n}", PERF, {"n": n, "p": n, "mode": "uniform", "alpha": 0.5, "beta": 0.5})
        for n in (1024, 2048, 4096, 8192)
    ],
    flops=_flops,
    bytes=_bytes,
    version=3,  # v2: tolerance widened by the tolerance audit; v3: TF32 truncation
    # audit: outlier rows put TF32 error at 0.59x the 1x allowance. Triton's tl.dot truncates to TF32: over 300
    # seeds of outlier_128x16 the truncating model (kbx.quality audit --tail --tail-model truncating, 2026-11-28)
    # reached 1.74x the 2x allowance (1 seed over 1), and over 1,000 seeds 2.37x; 10x leaves 2x headroom
    tolerance=matmul_tolerance(10.0),
    notes="fp32 tolerance allows TF32 tl.dot (rms term); upstream's 1e-5 rejects Triton's default matmul precision.",
)
