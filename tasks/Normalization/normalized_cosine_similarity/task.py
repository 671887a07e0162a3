"""Normalization/normalized_cosine_similarity: cosine similarity of two fp32 tensors after p-norm normalising each."""

import torch
import torch.nn.functional as F

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(
    x1: torch.Tensor,
    x2: torch.Tensor,
    dim: int = 1,
    eps_similarity: float = 1e-08,
    p_norm: float = 2,
    eps_norm: float = 1e-12,
) -> torch.Tensor:
    a = F.normalize(x1, p=p_norm, dim=dim, eps=eps_norm)
    b = F.normalize(x2, p=p_norm, dim=dim, eps=eps_norm)
    return F.cosine_similarity(a, b, dim=dim, eps=eps_similarity)


def make_inputs(params, gen, device) -> Call:
    if "x1" in params:
        x1 = literal(params["x1"], "float32", device)
        x2 = literal(params["x2"], "float32", device)
    else:
        x1 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        x2 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("dim", "p_norm", "eps_norm") if k in params}
    return Call((x1, x2), kwargs)


def _flops(x1, x2, dim=1, eps_similarity=1e-08, p_norm=2, eps_norm=1e-12):
    return 8.0 * x1.numel()


def _bytes(x1, x2, dim=1, eps_similarity=1e-08, p_norm=2, eps_norm=1e-12):
    out = x1.numel() // x1.shape[dim]
    return float((x1.numel() + x2.numel() + out) * x1.element_size())


_TINY = 1e-10

TASK = Task(
    entry="normalized_cosine_similarity",
    dtypes=("float32",),
    signature=(
        "normalized_cosine_similarity(x1: torch.Tensor, x2: torch.Tensor, dim: int = 1, "
        "eps_similarity: float = 1e-08, p_norm: float = 2, eps_norm: float = 1e-12) -> torch.Tensor"
    ),
    description=(
        "First normalise each fp32 input along dim as F.normalize does: x / max(||x||_p, eps_norm) with "
        "p = p_norm. Then return the cosine similarity of the two normalised tensors along dim as "
        "F.cosine_similarity with eps = eps_similarity: dot(a, b) / sqrt(max(||a||_2^2 * ||b||_2^2, eps^2)). "
        "The result has the inputs' shape with dim removed."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2x2", FIXED, {"x1": [[1.0, 2.0], [3.0, 4.0]], "x2": [[2.0, 3.0], [4.0, 5.0]]}),
        Case("fixed_dim0", FIXED, {"x1": [[1.0, 2.0, 3.0]], "x2": [[2.0, 3.0, 4.0]], "dim": 0}),
        Case("fixed_p1_orthogonal", FIXED,
             {"x1": [[1.0, 0.0], [0.0, 1.0]], "x2": [[0.0, 1.0], [1.0, 0.0]], "p_norm": 1}),  # fmt: skip
        Case("fixed_tiny_eps_norm", FIXED,
             {"x1": [[_TINY, 0.0], [0.0, _TINY]], "x2": [[0.0, _TINY], [_TINY, 0.0]], "eps_norm": 1e-10}),  # fmt: skip
        Case("standard_256x128_p2", STANDARD, {"shape": (256, 128), "mode": "standard"}),
        Case("standard_128x256_p1", STANDARD, {"shape": (128, 256), "mode": "standard", "p_norm": 1}),
        Case("standard_3d_dim2", STANDARD, {"shape": (4, 32, 64), "mode": "standard", "dim": 2}),
        Case("outlier_256x128_p2", OUTLIER, {"shape": (256, 128), "mode": "outlier"}),
        Case("outlier_128x256_p1", OUTLIER, {"shape": (128, 256), "mode": "outlier", "p_norm": 1}),
    ],
    perf=[Case(f"rows2^{e}", PERF, {"shape": (2**e, 1024), "mode": "uniform"}) for e in (15, 16, 17, 18)],
    flops=_flops,
    bytes=_bytes,
)
