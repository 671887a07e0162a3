"""Normalization/spectral_norm_eig: the spectral radius (largest eigenvalue modulus) of square fp32 matrices, batched.

Despite the name this is max |eigenvalue| of a general eigendecomposition, not the largest
singular value. kbx departures: the fp32 rtol is 1e-4 (see the tolerance comment); upstream's
perf matrices were at most 128x128 (microseconds of work), kbx's perf shapes are batches of them.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(A: torch.Tensor, *, out=None) -> torch.Tensor:
    r = torch.linalg.eigvals(A).abs().amax(dim=-1)
    if out is not None:
        return out.copy_(r)
    return r


def make_inputs(params, gen, device) -> Call:
    if "A" in params:
        return Call((literal(params["A"], "float32", device),))
    a = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if params["mode"] != "uniform":
        a = a.clamp(-10.0, 10.0)
    return Call((a,))


def _flops(A, *, out=None):
    n = A.shape[-1]
    return 32.0 * n**3 * (A.numel() // (n * n))


def _bytes(A, *, out=None):
    n = A.shape[-1]
    return float((A.numel() + A.numel() // (n * n)) * A.element_size())


_M1 = [[1.0, 2.0], [3.0, 4.0]]
_M2 = [[5.0, 6.0], [7.0, 8.0]]
_M3 = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
_M4 = [[9.0, 8.0, 7.0], [6.0, 5.0, 4.0], [3.0, 2.0, 1.0]]

TASK = Task(
    entry="spectral_norm_eig",
    dtypes=("float32",),
    signature="spectral_norm_eig(A: torch.Tensor, *, out=None) -> torch.Tensor",
    description=(
        "For each real square fp32 matrix in A (..., n, n), return the largest modulus |lambda| over its "
        "(generally complex) eigenvalues, i.e. the spectral radius (not the largest singular value), as an fp32 "
        "tensor of shape (...). If out is given, copy the result into it and return it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED, {"A": _M1}),
        Case("fixed_batch_2x2", FIXED, {"A": [_M1, _M2]}),
        Case("fixed_3x3", FIXED, {"A": _M3}),
        Case("fixed_batch_3x3", FIXED, {"A": [_M3, _M4]}),
        Case("fixed_rotation", FIXED, {"A": [[0.0, -2.0], [2.0, 0.0]]}),
        Case("standard_batch_16x32", STANDARD, {"shape": (16, 32, 32), "mode": "standard"}),
        Case("standard_single_32", STANDARD, {"shape": (32, 32), "mode": "standard"}),
        Case("standard_batch_8x64", STANDARD, {"shape": (8, 64, 64), "mode": "standard"}),
        Case("standard_single_64", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier_batch_16x32", OUTLIER, {"shape": (16, 32, 32), "mode": "outlier"}),
        Case("outlier_single_64", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[
        Case(f"b{b}_n{n}", PERF, {"shape": (b, n, n), "mode": "uniform"})
        for b, n in ((64, 64), (64, 128), (16, 256))
    ],
    flops=_flops,
    bytes=_bytes,
    # Eigenvalues of non-symmetric matrices are more sensitive to rounding than the matrix entries
    # (condition numbers of a few units to tens for these inputs), so two correct fp32 solvers
    # differ in the spectral radius by up to ~1e-5 relative; 1e-4 keeps a margin.
    tolerance=Tolerance(rtol={"float32": 1e-4}),
    notes="fp32 rtol 1e-4 (eigenvalue sensitivity); perf shapes are batches of matrices",
)
