"""LinearAlgebra/matrix_power_eig: A^k for symmetric matrices through the eigendecomposition, V diag(w^k) V^T.

kbx departures: for batched input upstream's reference applied torch.diag to the (B, n) eigenvalue
matrix (taking its main diagonal) and broadcast the products across the batch, which mixes the
matrices and needs B == n; kbx computes V_b diag(w_b^k) V_b^T for each matrix b of the batch. The
eigenvector sign (and repeated-eigenvalue basis) ambiguity cancels in the product, so outputs are
compared elementwise. The fp32 tolerance adds 1e-3 * rms(output) (see the tolerance comment).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor
from kbx.tasks.spec import TF32_RMS_ATOL


def reference(A: torch.Tensor, k: float, *, out=None) -> torch.Tensor:
    w, v = torch.linalg.eigh(A)  # reads the lower triangle
    result = v @ torch.diag_embed(w**k) @ v.mT
    return out.copy_(result) if out is not None else result


def make_inputs(params, gen, device) -> Call:
    k = params["k"]
    if "values" in params:
        return Call((literal(params["values"], "float32", device), k))
    n, mode, dtype = params["n"], params["mode"], params.get("dtype", "float64")
    x = rand_tensor((n, n), dtype, mode, gen, device)
    if params.get("build") == "symmetric":
        a = (x + x.T) / 2
    else:  # positive definite: x x^T + 1e-3 I
        a = x @ x.T + 1e-3 * torch.eye(n, dtype=x.dtype, device=device)
    return Call((a.contiguous(), k))


def _flops(A, k, *, out=None):
    n = A.shape[-1]
    return (4.0 / 3.0 + 4.0) * n**3 * (A.numel() // (n * n))


def _bytes(A, k, *, out=None):
    return 2.0 * A.numel() * A.element_size()


TASK = Task(
    entry="matrix_power_eig",
    dtypes=("float32", "float64"),
    signature="matrix_power_eig(A: torch.Tensor, k: float, *, out=None) -> torch.Tensor",
    description=(
        "For each real symmetric matrix in A (..., n, n), fp32 or fp64, of which only the lower triangle is "
        "read (as torch.linalg.eigh does), take its eigendecomposition A = V diag(w) V^T and return "
        "V diag(w^k) V^T in A's dtype and shape (A^k; a fractional k of a negative eigenvalue gives NaN). "
        "If out is given, copy the result into it and return it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_diag_square", FIXED, {"values": [[2.0, 0.0], [0.0, 3.0]], "k": 2}),
        Case("fixed_spd_sqrt", FIXED, {"values": [[2.0, 0.5, 0.1], [0.5, 1.5, 0.3], [0.1, 0.3, 1.0]], "k": 0.5}),
        Case("fixed_batch_lower_cube", FIXED, {"values": [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
                                               "k": 3}),  # fmt: skip
        Case("standard_sqrt", STANDARD, {"n": 16, "mode": "standard", "k": 0.5}),
        Case("standard_square", STANDARD, {"n": 16, "mode": "standard", "k": 2.0}),
        Case("standard_fp32_symmetric_cube", STANDARD, {"n": 24, "mode": "standard", "k": 3, "dtype": "float32",
                                                        "build": "symmetric"}),  # fmt: skip
        Case("outlier_sqrt", OUTLIER, {"n": 16, "mode": "outlier", "k": 0.5}),
        Case("outlier_square", OUTLIER, {"n": 16, "mode": "outlier", "k": 2.0}),
    ],
    perf=[
        Case(f"n{n}", PERF, {"n": n, "mode": "standard", "k": 2, "dtype": "float32", "build": "symmetric"})
        for n in (512, 1024, 2048)
    ],
    flops=_flops,
    bytes=_bytes,
    version=3,  # tolerance widened by the tolerance audit, then by the GPU audit
    # fp32 eigendecompositions of symmetric randn matrices (n = 1024) reproduce A^2 to about
    # 6e-5 * rms(A^2) (measured against fp64); two honest solvers differ by up to twice that and the
    # error grows with n, so 1e-3 * rms leaves room at n = 2048 while wrong answers are far off.
    # audit: rebuilding V diag(L^p) V^T in TF32 (tl.dot) reaches 4.1x of 1e-3 * rms; the TF32 allowance covers it
    # GPU audit on an H100 (2026-11-27): the fp32 reference itself (cuSOLVER's eigensolver) was 1.28x of
    # that allowance from float64 at n512, where the CPU's LAPACK stays within it; 4x brings it to 0.32
    tolerance=Tolerance(rms_atol={"float32": 4 * TF32_RMS_ATOL}),
    notes="batched input: one power per matrix (upstream mixed the batch through torch.diag); fp32 +1e-3*rms",
)
