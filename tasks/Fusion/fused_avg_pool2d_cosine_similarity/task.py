"""Fusion/fused_avg_pool2d_cosine_similarity: channel-wise cosine similarity of two NCHW maps, then 2-D average pooling.

kbx departures: upstream's fixed cases drew their inputs at random (here seeded cases of the same
shapes). Perf shapes are (16, 64, H, H) pairs with H = 128..512 (upstream went to H = 1024, 4 GB inputs).
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(x1, x2, kernel_size: int, stride: int = None, padding: int = 0, eps: float = 1e-08) -> torch.Tensor:
    c = F.cosine_similarity(x1, x2, dim=1, eps=eps).unsqueeze(1)
    return F.avg_pool2d(c, kernel_size=kernel_size, stride=stride, padding=padding)


def make_inputs(params, gen, device) -> Call:
    x1 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    x2 = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("stride", "padding", "eps") if k in params}
    return Call((x1, x2, params["k"]), kwargs)


def _out_hw(x1, kernel_size, stride, padding):
    s = stride if stride else kernel_size
    ho = (x1.shape[-2] + 2 * padding - kernel_size) // s + 1
    wo = (x1.shape[-1] + 2 * padding - kernel_size) // s + 1
    return ho, wo


def _flops(x1, x2, kernel_size, stride=None, padding=0, eps=1e-08):
    ho, wo = _out_hw(x1, kernel_size, stride, padding)
    return float(6 * x1.numel() + kernel_size * kernel_size * x1.shape[0] * ho * wo)


def _bytes(x1, x2, kernel_size, stride=None, padding=0, eps=1e-08):
    ho, wo = _out_hw(x1, kernel_size, stride, padding)
    return float((x1.numel() + x2.numel() + x1.shape[0] * ho * wo) * x1.element_size())


_SMALL = {"shape": (1, 3, 8, 8), "mode": "standard", "k": 2}
_RAND = {"shape": (4, 16, 32, 32), "k": 2, "stride": 2, "padding": 0}

TASK = Task(
    entry="fused_avg_pool2d_cosine_similarity",
    dtypes=("float32",),
    signature=(
        "fused_avg_pool2d_cosine_similarity(x1: torch.Tensor, x2: torch.Tensor, kernel_size: int, "
        "stride: int | None = None, padding: int = 0, eps: float = 1e-08) -> torch.Tensor"
    ),
    description=(
        "For fp32 x1, x2 of shape (N, C, H, W), compute the cosine similarity along the channel dim at every "
        "(n, h, w): sum_c x1*x2 / (max(||x1||, eps) * max(||x2||, eps)), giving an (N, 1, H, W) map; then "
        "average-pool it with a square kernel_size window, stride (None means kernel_size) and zero padding "
        "`padding` (padded cells count in the divisor, i.e. every window divides by kernel_size^2; output size "
        "rounds down). Return the (N, 1, Ho, Wo) result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_k2", STANDARD, dict(_SMALL)),
        Case("small_k2_s1", STANDARD, {**_SMALL, "stride": 1}),
        Case("small_k2_p1", STANDARD, {**_SMALL, "padding": 1}),
        Case("small_k2_eps1e-6", STANDARD, {**_SMALL, "eps": 1e-6}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_k3_s2_p1", STANDARD, {"shape": (2, 16, 31, 33), "k": 3, "stride": 2, "padding": 1,
                                             "mode": "standard"}),  # fmt: skip
    ],
    perf=[
        Case(f"H{h}", PERF, {"shape": (16, 64, h, h), "k": 3, "stride": 2, "padding": 1, "mode": "uniform"})
        for h in (128, 256, 512)
    ],
    flops=_flops,
    bytes=_bytes,
    notes="fixed random cases seeded; perf H capped at 512.",
)
