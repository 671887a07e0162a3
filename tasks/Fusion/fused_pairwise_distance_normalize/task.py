"""Fusion/fused_pairwise_distance_normalize: all-pairs p-norm distances between the p-normalized rows of
x1 (N, D) and x2 (M, D), clamped below at eps_distance.

The reference computes the distances directly (no Gram-matrix expansion). The tolerance is
matmul_tolerance(): a kernel may compute p=2 distances through a matrix product (TF32 tl.dot).
"""

import torch
import torch.nn.functional as F

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(x1, x2, p_norm: float = 2.0, eps_norm: float = 1e-12, eps_distance: float = 1e-06,
              keepdim: bool = False):  # fmt: skip
    a = F.normalize(x1, p=p_norm, dim=-1, eps=eps_norm)
    b = F.normalize(x2, p=p_norm, dim=-1, eps=eps_norm)
    d = torch.cdist(a, b, p=p_norm, compute_mode="donot_use_mm_for_euclid_dist").clamp_min(eps_distance)
    return d.unsqueeze(-1) if keepdim else d


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x1 = literal(params["values"], "float32", device)
        x2 = literal(params["values2"], "float32", device)
    else:
        x1 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        x2 = rand_tensor(params.get("shape2", params["shape"]), "float32", params["mode"], gen, device)
    return Call((x1, x2), {k: params[k] for k in ("p_norm", "eps_norm", "eps_distance", "keepdim") if k in params})


def _flops(x1, x2, p_norm=2.0, eps_norm=1e-12, eps_distance=1e-06, keepdim=False):
    return float(3 * x1.shape[0] * x2.shape[0] * x1.shape[1])


def _bytes(x1, x2, p_norm=2.0, eps_norm=1e-12, eps_distance=1e-06, keepdim=False):
    return float((x1.numel() + x2.numel() + x1.shape[0] * x2.shape[0]) * x1.element_size())


_FIX = {"values": [[1.0, 2.0], [3.0, 4.0]], "values2": [[5.0, 6.0], [7.0, 8.0]]}

TASK = Task(
    entry="fused_pairwise_distance_normalize",
    dtypes=("float32",),
    signature=(
        "fused_pairwise_distance_normalize(x1: torch.Tensor, x2: torch.Tensor, p_norm: float = 2.0, "
        "eps_norm: float = 1e-12, eps_distance: float = 1e-06, keepdim: bool = False) -> torch.Tensor"
    ),
    description=(
        "Divide each row of fp32 x1 (N, D) and x2 (M, D) by max(||row||_p, eps_norm) with p = p_norm. Return the "
        "(N, M) fp32 matrix of p_norm-norm distances ||a_i - b_j||_p between every normalized row a_i of x1 and "
        "b_j of x2, each clamped below at eps_distance (max, not add); keepdim=True appends a trailing size-1 "
        "dim, giving (N, M, 1)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, dict(_FIX)),
        Case("fixed_p1", FIXED, {**_FIX, "p_norm": 1.0}),
        Case("fixed_eps_norm", FIXED, {**_FIX, "eps_norm": 1e-10}),
        Case("fixed_keepdim", FIXED, {**_FIX, "keepdim": True}),
        Case("fixed_identical_rows", FIXED, {"values": [[1.0, 2.0], [0.0, 0.0]], "values2": [[2.0, 4.0], [0.0, 0.0]]}),
        Case("standard", STANDARD, {"shape": (32, 128), "mode": "standard"}),
        Case("standard_keepdim_nm", STANDARD, {"shape": (32, 128), "shape2": (48, 128), "mode": "standard",
                                               "keepdim": True}),  # fmt: skip
        Case("outlier", OUTLIER, {"shape": (32, 128), "mode": "outlier"}),
        Case("outlier_keepdim", OUTLIER, {"shape": (32, 128), "mode": "outlier", "keepdim": True}),
    ],
    perf=[Case(f"n{n}", PERF, {"shape": (n, 128), "mode": "standard"}) for n in (2048, 4096, 8192, 16384)],
    flops=_flops,
    bytes=_bytes,
    tolerance=matmul_tolerance(),
    notes="TF32-level tolerance (a kernel may use the Gram-matrix form with tl.dot); adds an N != M case.",
)
