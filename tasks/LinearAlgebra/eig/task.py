"""LinearAlgebra/eig: eigenvalues and eigenvectors of a general (non-symmetric) square fp32 matrix, complex outputs.

kbx departure: upstream compared torch.linalg.eig's complex outputs bitwise, which only a call of
the same LAPACK/cuSOLVER routine can reproduce: an eigendecomposition is unique only up to the order
of the eigenvalues and the phase (complex unit factor) of each eigenvector, plus any basis of a
repeated eigenvalue's eigenspace. kbx therefore judges the returned pair (w, V) by invariants, with
the task's `stochastic` hook used as its custom judge (this output is not random, but it is not
unique either): exact shapes and dtypes (complex64); w matches the fp64 eigenvalues of A as a
multiset (one-to-one nearest matching) within 1e-4 * ||A||_2; every column of V has unit 2-norm
within 1e-3; the residual ||A v_j - w_j v_j|| is within 1e-4 * ||A||_2 for every j; and V is
invertible (smallest singular value >= 1e-4), so repeated vectors cannot pass. Honest fp32 solvers
land 20 to 100 times inside these bounds on the task's inputs. Upstream's random matrices were fp64
symmetric; kbx's are fp32: symmetric, and normal non-symmetric ones with complex eigenvalue pairs.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.identities import size_bound, within
from kbx.tasks.inputs import literal, rand_tensor

MIN_SV = 1e-4  # smallest singular value the eigenvector matrix may have


def reference(A: torch.Tensor):
    return torch.linalg.eig(A)


def _reflect(a, v):
    """H a H for the Householder reflection H = I - 2 v v^T / (v^T v) (symmetric and orthogonal)."""
    h = torch.eye(v.numel(), dtype=a.dtype, device=a.device) - (2.0 / (v @ v)) * torch.outer(v, v)
    return h @ a @ h


def make_inputs(params, gen, device) -> Call:
    if "A" in params:
        return Call((literal(params["A"], "float32", device),))
    n, mode, kind = params["n"], params["mode"], params["kind"]
    if kind == "symmetric":
        x = rand_tensor((n, n), "float32", mode, gen, device)
        a = (x + x.T) / 2 + 1e-3 * torch.eye(n, dtype=torch.float32, device=device)
    elif kind == "normal":  # 2x2 blocks [[re, -im], [im, re]] mixed by two reflections: eigenvalues re +- i im
        re = rand_tensor((n // 2,), "float32", mode, gen, device)
        im = 0.5 + rand_tensor((n // 2,), "float32", "uniform", gen, device)
        a = torch.zeros((n, n), dtype=torch.float32, device=device)
        i = torch.arange(0, n, 2, device=device)
        a[i, i], a[i + 1, i + 1], a[i, i + 1], a[i + 1, i] = re, re, -im, im
        for _ in range(2):
            a = _reflect(a, rand_tensor((n,), "float32", mode, gen, device))
    else:  # "uniform": a general non-symmetric matrix with entries in [0, 1)
        a = rand_tensor((n, n), "float32", "uniform", gen, device)
    return Call((a.contiguous(),))


def _match(ref, got, kappa):
    """Largest distance / kappa of a one-to-one matching of two eigenvalue lists, pairing closest first."""
    d = (ref[:, None] - got[None, :]).abs() / kappa[:, None]
    worst, n, matched = 0.0, ref.numel(), 0
    used_r, used_g = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    for flat in torch.argsort(d.flatten()).tolist():
        r, g = divmod(flat, n)
        if not used_r[r] and not used_g[g]:
            used_r[r] = used_g[g] = True
            worst = max(worst, float(d[r, g]))
            matched += 1
            if matched == n:
                break
    return worst


def eigenvalue_conditions(a):
    """A's fp64 eigenvalues and each one's condition number ||x_i|| ||y_i|| (y_i^H x_i = 1), at least 1."""
    w, x = torch.linalg.eig(a.to(torch.complex128))
    y = torch.linalg.inv(x)  # rows: left eigenvectors scaled so that y_i^H x_i = 1
    kappa = torch.linalg.vector_norm(x, dim=0) * torch.linalg.vector_norm(y, dim=1)
    kappa = torch.nan_to_num(kappa.real, nan=float("inf"), posinf=float("inf")).clamp_min(1.0)
    return w, kappa


def check_decomposition(call: Call, got) -> str:
    """'' when got = (w, V) is an accurate eigendecomposition of A, else the reason."""
    a = call.args[0].detach().cpu().double()
    w, v = (t.detach().cpu().to(torch.complex128) for t in got)
    if not (torch.isfinite(torch.view_as_real(w)).all() and torch.isfinite(torch.view_as_real(v)).all()):
        return "non-finite eigenvalues or eigenvectors"
    tol = size_bound(a.shape[-1], call.args[0].dtype)
    scale = max(float(torch.linalg.matrix_norm(a, ord=2)), 1e-30)
    ref, kappa = eigenvalue_conditions(a)
    reason = within("max |w_i - eigenvalue_i| / (kappa_i ||A||_2)", _match(ref, w, kappa) / scale, tol)
    if reason:
        return f"eigenvalues differ from A's: {reason}"
    norms = torch.linalg.vector_norm(v, dim=0)
    reason = within("max | ||v_j|| - 1 |", float((norms - 1.0).abs().max()), tol)
    if reason:
        return f"eigenvector columns must have unit norm: {reason}"
    resid = float(torch.linalg.vector_norm(a.to(torch.complex128) @ v - v * w, dim=0).max())
    reason = within("max ||A v - w v|| / ||A||_2", resid / scale, tol)
    if reason:
        return reason
    if float(torch.linalg.svdvals(v).min()) < MIN_SV:
        return "eigenvectors are (nearly) linearly dependent"
    return ""


def _flops(A):
    return 64.0 * A.shape[-1] ** 3


def _bytes(A):
    n = A.shape[-1]
    return float(n * n * 4 + n * 8 + n * n * 8)


TASK = Task(
    entry="eig",
    dtypes=("float32", "complex64"),
    signature="eig(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]",
    description=(
        "Eigendecomposition of a general real square fp32 matrix A (n, n), as torch.linalg.eig: return "
        "(w, V) with w complex64 of shape (n,) holding the eigenvalues and V complex64 of shape (n, n) whose "
        "column j is an eigenvector for w[j] (A V = V diag(w)), each column scaled to unit 2-norm. Any "
        "eigenvalue order and any eigenvector phase are accepted; outputs are judged by eigenvalue accuracy, "
        "the residual A V - V diag(w), unit norms and linear independence of the columns."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_diag", FIXED, {"A": [[2.0, 0.0], [0.0, 3.0]]}),
        Case("fixed_identity", FIXED, {"A": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}),
        Case("fixed_rotation", FIXED, {"A": [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]}),
        Case("fixed_symmetric", FIXED, {"A": [[4.0, 1.0, 0.0], [1.0, 4.0, 0.0], [0.0, 0.0, 5.0]]}),
        Case("standard_sym_8", STANDARD, {"n": 8, "mode": "standard", "kind": "symmetric"}),
        Case("standard_sym_16", STANDARD, {"n": 16, "mode": "standard", "kind": "symmetric"}),
        Case("standard_normal_complex_16", STANDARD, {"n": 16, "mode": "standard", "kind": "normal"}),
        Case("standard_general_16", STANDARD, {"n": 16, "mode": "standard", "kind": "uniform"}),
        Case("outlier_sym_16", OUTLIER, {"n": 16, "mode": "outlier", "kind": "symmetric"}),
        Case("outlier_normal_complex_16", OUTLIER, {"n": 16, "mode": "outlier", "kind": "normal"}),
    ],
    perf=[Case(f"n{n}", PERF, {"n": n, "mode": "uniform", "kind": "uniform"}) for n in (128, 256, 512, 1024)],
    flops=_flops,
    bytes=_bytes,
    stochastic=check_decomposition,
    version=2,
    notes=(
        "judged by invariants (eigenvalue multiset, residual, unit norms, independence) via the stochastic "
        "hook, not bitwise against torch's order/phase; fp32 symmetric and normal complex random inputs"
    ),
)
