"""Normalization/normalize_pairwise_distance: p-norm distances between fp32 row vectors, then normalised along a dim.

kbx adds a keepdim case and a p_norm = 1 case. Perf inputs are (16, 2^i, 128) for i = 13..16
(upstream went up to i = 15, mostly far smaller).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(x1: torch.Tensor, x2: torch.Tensor, p_distance: float = 2.0, eps_distance: float = 1e-06,
              keepdim: bool = False, p_norm: float = 2, dim_norm: int = 1,
              eps_norm: float = 1e-12) -> torch.Tensor:  # fmt: skip
    d = torch.linalg.vector_norm(x1 - x2, ord=p_distance, dim=-1, keepdim=keepdim) + eps_distance
    return torch.nn.functional.normalize(d, p=p_norm, dim=dim_norm, eps=eps_norm)


def make_inputs(params, gen, device) -> Call:
    kwargs = {k: params[k] for k in ("p_distance", "keepdim", "p_norm", "dim_norm") if k in params}
    if "x1" in params:
        return Call((literal(params["x1"], "float32", device), literal(params["x2"], "float32", device)), kwargs)
    x1 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    x2 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x1, x2), kwargs)


def _flops(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2, dim_norm=1, eps_norm=1e-12):
    rows = x1.numel() // x1.shape[-1]
    return float(3 * x1.numel() + 4 * rows)


def _bytes(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2, dim_norm=1, eps_norm=1e-12):
    rows = x1.numel() // x1.shape[-1]
    return float((2 * x1.numel() + rows) * x1.element_size())


def _rand(name, kind, shape, mode, **extra):
    return Case(name, kind, {"shape": shape, "mode": mode, **extra})


_X1, _X2 = [[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [2.5, 4.0]]

TASK = Task(
    entry="normalize_pairwise_distance",
    dtypes=("float32",),
    signature=(
        "normalize_pairwise_distance(x1: torch.Tensor, x2: torch.Tensor, p_distance: float = 2.0, "
        "eps_distance: float = 1e-06, keepdim: bool = False, p_norm: float = 2, dim_norm: int = 1, "
        "eps_norm: float = 1e-12) -> torch.Tensor"
    ),
    description=(
        "For fp32 tensors x1 and x2 of equal shape, compute d = ||x1 - x2||_{p_distance} over the last dim "
        "(kept as size 1 if keepdim) plus eps_distance (added after the norm), then return "
        "d / max(||d||_{p_norm} along dim_norm (kept), eps_norm), i.e. "
        "torch.nn.functional.normalize(d, p=p_norm, dim=dim_norm, eps=eps_norm). fp32 output of d's shape."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_p2_dim0", FIXED, {"x1": _X1, "x2": _X2, "dim_norm": 0}),
        Case("fixed_p1_dim0", FIXED, {"x1": _X1, "x2": _X2, "dim_norm": 0, "p_distance": 1.0}),
        _rand("standard_32x128x64_p2", STANDARD, (32, 128, 64), "standard"),
        _rand("standard_16x64x32_p1", STANDARD, (16, 64, 32), "standard", p_distance=1.0),
        _rand("standard_keepdim_pnorm1", STANDARD, (8, 50, 33), "standard", keepdim=True, p_norm=1.0),
        _rand("outlier_32x128x64_p2", OUTLIER, (32, 128, 64), "outlier"),
        _rand("outlier_16x64x32_p1", OUTLIER, (16, 64, 32), "outlier", p_distance=1.0),
    ],
    perf=[_rand(f"n2^{i}", PERF, (16, 2**i, 128), "uniform") for i in (13, 14, 15, 16)],
    flops=_flops,
    bytes=_bytes,
    notes="adds keepdim and p_norm=1 cases; perf (16, 2^13..2^16, 128)",
)
