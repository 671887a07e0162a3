"""Fusion/fused_svd_reconstruct: U @ diag(S) @ Vh from the reduced SVD of a 2-D fp32 matrix.

The exact result is A itself; the reference differs from A only by rounding (measured up to about
3e-5 of rms(A) at n = 512). Because the reconstruction product may run in TF32 (tl.dot), the
tolerance is matmul_tolerance(2) (the TF32 tail over seeds). As upstream, a kernel that copies A
passes: the task measures how fast the factor-and-reconstruct pipeline runs, not an interesting
numerical output. Upstream's torch.rand perf matrices and random cases are kept; fixed cases are
upstream's literals.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(A):
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    return U @ torch.diag(S) @ Vh


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        return Call((literal(params["values"], "float32", device),))
    return Call((rand_tensor(params["shape"], "float32", params["mode"], gen, device),))


def _flops(A):
    m, n = A.shape
    k = min(m, n)
    return float(4 * m * n * k + 2 * k * n * (k + m))


def _bytes(A):
    return 2.0 * A.numel() * A.element_size()


TASK = Task(
    entry="fused_svd_reconstruct",
    dtypes=("float32",),
    signature="fused_svd_reconstruct(A: torch.Tensor) -> torch.Tensor",
    description=(
        "For a 2-D fp32 matrix A (m, n), compute the reduced singular value decomposition A = U diag(S) Vh "
        "(U (m, k), S (k,), Vh (k, n), k = min(m, n)) and return the reconstruction U @ diag(S) @ Vh as a new "
        "(m, n) fp32 tensor."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED, {"values": [[1.0, 2.0], [3.0, 4.0]]}),
        Case("fixed_3x2", FIXED, {"values": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}),
        Case("fixed_2x3", FIXED, {"values": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}),
        Case("fixed_1x1", FIXED, {"values": [[42.0]]}),
        Case("standard_square", STANDARD, {"shape": (16, 16), "mode": "standard"}),
        Case("standard_tall", STANDARD, {"shape": (32, 16), "mode": "standard"}),
        Case("standard_wide", STANDARD, {"shape": (16, 32), "mode": "standard"}),
        Case("outlier_square", OUTLIER, {"shape": (16, 16), "mode": "outlier"}),
        Case("outlier_tall", OUTLIER, {"shape": (32, 16), "mode": "outlier"}),
        Case("outlier_wide", OUTLIER, {"shape": (16, 32), "mode": "outlier"}),
    ],
    perf=[Case(f"n{n}", PERF, {"shape": (n, n), "mode": "uniform"}) for n in (256, 512, 1024)],
    flops=_flops,
    bytes=_bytes,
    version=3,  # v2: matmul_tolerance(2): the TF32 tail over seeds; v3: TF32 truncation
    # Over 1,000 seeds the TF32 model of kbx.quality.audit reached 1.49x the 1x allowance on outlier_wide
    # (4 seeds over 1) and 1.13x on outlier_square (3), so a run's secret seed could fail an honest TF32
    # reconstruction (kbx.quality audit --tail, 2026-11-28). Triton's tl.dot truncates instead: the truncating
    # model reached 1.61x the 2x allowance on outlier_wide (28 seeds over 1); 7x puts it at 0.46.
    tolerance=matmul_tolerance(7.0),
    notes="TF32-level tolerance (the exact answer is A; the reference differs by rounding).",
)
