"""LinearAlgebra/low_rank_svd_approximation: the best rank-k approximation of fp32 matrices (truncated SVD).

The SVD factors are unique only up to signs (and rotations within repeated singular values), so
kbx, like upstream, compares only the reconstruction U_k diag(S_k) Vh_k, which is invariant to
them. That reconstruction is itself well defined only when sigma_k > sigma_{k+1}, and its fp32
error grows like sigma_1 / (sigma_k - sigma_{k+1}); upstream's randn and rand inputs have small
gaps there, so honest fp32 kernels could not meet 1e-5. kbx departure: inputs are built with a
known spectrum, A = H1 H2 diag(s) H3 H4 with random Householder reflections H and singular values
s with k of them in [1, 2) and the rest in [0, 0.25) (in random positions), so the rank-k
truncation is well separated. fp32 atol/rtol 1e-4 (see the tolerance comment).
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import rand_tensor
from kbx.tasks.spec import TF32_RMS_ATOL


def reference(A: torch.Tensor, k: int, *, full_matrices: bool = True, out=None) -> torch.Tensor:
    u, s, vh = torch.linalg.svd(A, full_matrices=full_matrices)
    approx = u[..., :, :k] @ torch.diag_embed(s[..., :k]) @ vh[..., :k, :]
    if out is not None:
        return out.copy_(approx)
    return approx


def _reflect_rows(m, v):
    """H m for the Householder reflection H = I - 2 v v^T / (v^T v); v (..., rows)."""
    coef = (v.unsqueeze(-1) * m).sum(-2, keepdim=True) * (2.0 / (v * v).sum(-1)[..., None, None])
    return m - v.unsqueeze(-1) * coef


def with_spectrum(batch, m, n, k, mode, gen, device):
    r = min(m, n)
    top = 1.0 + rand_tensor((*batch, k), "float32", "uniform", gen, device)
    rest = 0.25 * rand_tensor((*batch, r - k), "float32", "uniform", gen, device)
    s = torch.cat([top, rest], dim=-1)
    s = s[..., torch.randperm(r, generator=gen, device=device)]
    a = torch.zeros((*batch, m, n), dtype=torch.float32, device=device)
    a[..., torch.arange(r, device=device), torch.arange(r, device=device)] = s
    for _ in range(2):  # two reflections on each side; their products are orthogonal
        a = _reflect_rows(a, rand_tensor((*batch, m), "float32", mode, gen, device))
        a = _reflect_rows(a.mT, rand_tensor((*batch, n), "float32", mode, gen, device)).mT
    return a.contiguous()


def make_inputs(params, gen, device) -> Call:
    m, n = params["shape"][-2:]
    a = with_spectrum(tuple(params["shape"][:-2]), m, n, params["k"], params["mode"], gen, device)
    return Call((a, params["k"]), {"full_matrices": params.get("full_matrices", True)})


def _flops(A, k, *, full_matrices=True, out=None):
    m, n = A.shape[-2:]
    batch = A.numel() // (m * n)
    return float(batch * (4 * m * n * min(m, n) + 2 * m * k * n))


def _bytes(A, k, *, full_matrices=True, out=None):
    return 2.0 * A.numel() * A.element_size()


def _case(name, kind, shape, k, mode, full=True):
    return Case(name, kind, {"shape": shape, "k": k, "mode": mode, "full_matrices": full})


TASK = Task(
    entry="low_rank_svd_approximation",
    dtypes=("float32",),
    signature=(
        "low_rank_svd_approximation(A: torch.Tensor, k: int, *, full_matrices: bool = True, out=None) "
        "-> torch.Tensor"
    ),
    description=(
        "Return the rank-k truncated-SVD approximation of each fp32 matrix in A (..., m, n): with the singular "
        "value decomposition A = U diag(S) Vh (singular values in descending order), the result is "
        "U[..., :, :k] diag(S[..., :k]) Vh[..., :k, :], an fp32 tensor of A's shape. full_matrices (whether "
        "a full or reduced SVD is used) does not change the result. If out is given, copy the result into "
        "it and return it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("small_5x4_k2", STANDARD, (5, 4), 2, "standard"),
        _case("small_6x3_k2_reduced", STANDARD, (6, 3), 2, "standard", full=False),
        _case("small_batch_2x5x4_k3", STANDARD, (2, 5, 4), 3, "standard"),
        _case("small_batch_3x6x3_k2_reduced", STANDARD, (3, 6, 3), 2, "standard", full=False),
        _case("standard_32x16_k8", STANDARD, (32, 16), 8, "standard"),
        _case("standard_32x16_k8_reduced", STANDARD, (32, 16), 8, "standard", full=False),
        _case("standard_batch_4x32x16_k8_reduced", STANDARD, (4, 32, 16), 8, "standard", full=False),
        _case("standard_wide_16x40_k5", STANDARD, (16, 40), 5, "standard"),
        _case("outlier_32x16_k8", OUTLIER, (32, 16), 8, "outlier"),
        _case("outlier_batch_4x32x16_k8_reduced", OUTLIER, (4, 32, 16), 8, "outlier", full=False),
    ],
    perf=[_case(f"n{n}_k50", PERF, (n, n), 50, "standard") for n in (512, 1024, 1536)],
    flops=_flops,
    bytes=_bytes,
    version=3,  # tolerance widened by the tolerance audit, then by the GPU audit
    # fp32 SVDs of these matrices reconstruct to about 1e-6 absolute (singular values <= 2, gap
    # >= 0.75 at the cut); different algorithms (Jacobi, QR iteration, eigen-solves of A^T A)
    # differ by a few times that, over the default 1e-5 for entries near zero at n = 512.
    # audit: the U S V^T reconstruction in TF32 (tl.dot) misses 1e-4 by up to 5x and reaches 0.52x of a
    # 1x TF32 rms term; 2x that term leaves the 2x headroom
    # GPU audit on an H100 (2026-11-27): the real TF32 reconstruction at the n512_k50 perf shape erred by
    # 7.5e-4 where the bound was 6.4e-4 (ratio 1.17): its error follows the factors' magnitude (entries up
    # to 1.4), not the output's rms (0.02); 8x the rms term brings it to 0.41
    tolerance=Tolerance(atol={"float32": 1e-4}, rtol={"float32": 1e-4}, rms_atol={"float32": 8 * TF32_RMS_ATOL}),
    notes=(
        "inputs with a known, well-separated spectrum (upstream: randn/rand, ill-separated at the cut); "
        "reconstruction compared (sign-invariant); fp32 atol/rtol 1e-4"
    ),
)
