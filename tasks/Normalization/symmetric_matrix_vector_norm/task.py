"""Normalization/symmetric_matrix_vector_norm: the p-norm of (1 + beta) * alpha * A x for a symmetric fp32 A.

Perf matrices are (n, n) with n = 2^12..2^14 (upstream's went up to 2^14, mostly far smaller). The
fp32 rtol is 1e-4: the result is a norm of long dot products (see the tolerance comment).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(A: torch.Tensor, x: torch.Tensor, alpha: float, beta: float, p: float = 2.0) -> torch.Tensor:
    y = alpha * torch.mv(A, x)
    y = y + beta * y
    return torch.linalg.vector_norm(y, ord=p)


def make_inputs(params, gen, device) -> Call:
    kwargs = {"p": params["p"]} if "p" in params else {}
    scal = (params["alpha"], params["beta"])
    if "A" in params:
        return Call((literal(params["A"], "float32", device), literal(params["x"], "float32", device), *scal), kwargs)
    n, mode = params["n"], params["mode"]
    m = rand_tensor((n, n), "float32", mode, gen, device)
    a = ((m + m.T) / 2).contiguous()
    x = rand_tensor((n,), "float32", mode, gen, device)
    return Call((a, x, *scal), kwargs)


def _flops(A, x, alpha, beta, p=2.0):
    return 2.0 * A.numel()


def _bytes(A, x, alpha, beta, p=2.0):
    return float((A.numel() + x.numel() + 1) * A.element_size())


_A2, _A3 = [[2.0, 1.0], [1.0, 2.0]], [[4.0, 1.0, 2.0], [1.0, 3.0, 1.0], [2.0, 1.0, 3.0]]

TASK = Task(
    entry="symmetric_matrix_vector_norm",
    dtypes=("float32",),
    signature=(
        "symmetric_matrix_vector_norm(A: torch.Tensor, x: torch.Tensor, alpha: float, beta: float, "
        "p: float = 2.0) -> torch.Tensor"
    ),
    description=(
        "For a symmetric fp32 matrix A (n, n) and an fp32 vector x (n,), compute y = alpha * (A @ x), then "
        "y = y + beta * y (beta scales y itself), and return the vector p-norm of y "
        "(torch.linalg.vector_norm(y, ord=p)) as a 0-d fp32 tensor."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED, {"A": _A2, "x": [1.0, 1.0], "alpha": 1.0, "beta": 1.0}),
        Case("fixed_2x2_scaled", FIXED, {"A": _A2, "x": [1.0, 1.0], "alpha": 2.0, "beta": 0.5}),
        Case("fixed_2x2_p1", FIXED, {"A": _A2, "x": [1.0, 1.0], "alpha": 1.0, "beta": 1.0, "p": 1.0}),
        Case("fixed_3x3", FIXED, {"A": _A3, "x": [1.0, 2.0, 3.0], "alpha": 1.5, "beta": 0.5}),
        Case("standard_128_p2", STANDARD, {"n": 128, "mode": "standard", "alpha": 1.0, "beta": 0.5, "p": 2.0}),
        Case("standard_256_p1", STANDARD, {"n": 256, "mode": "standard", "alpha": 1.0, "beta": 1.0, "p": 1.0}),
        Case("standard_300_p3", STANDARD, {"n": 300, "mode": "standard", "alpha": -0.7, "beta": 0.25, "p": 3.0}),
        Case("outlier_128_p2", OUTLIER, {"n": 128, "mode": "outlier", "alpha": 1.0, "beta": 0.5, "p": 2.0}),
        Case("outlier_256_p1", OUTLIER, {"n": 256, "mode": "outlier", "alpha": 1.0, "beta": 1.0, "p": 1.0}),
    ],
    perf=[Case(f"n{n}", PERF, {"n": n, "mode": "uniform", "alpha": 1.0, "beta": 1.0, "p": 2.0})
          for n in (4096, 8192, 16384)],  # fmt: skip
    flops=_flops,
    bytes=_bytes,
    # Each entry of A x is a dot product of length up to 16384 and the norm sums n squares; blocked
    # fp32 orders differ from torch's by a few 1e-6 relative, over the default rtol 1e-5.
    tolerance=Tolerance(rtol={"float32": 1e-4}),
    notes="adds a p=3 case; perf n = 2^12..2^14; fp32 rtol 1e-4",
)
