"""Fusion/fused_cross_entropy_log_softmax: cross_entropy(log_softmax(input, dim), target), all F.cross_entropy options.

kbx departures: kbx adds cases with ignored targets and with reduction='none' (upstream tested only
mean and sum). Perf shapes are (B, 128) with B = 2^17..2^21 (upstream went to 2^23, 4 GB inputs).
"""

import torch
import torch.nn.functional as F

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(input, target, dim: int = 1, weight=None, ignore_index: int = -100, reduction: str = "mean",
              label_smoothing: float = 0.0) -> torch.Tensor:  # fmt: skip
    lp = F.log_softmax(input, dim=dim)
    return F.cross_entropy(lp, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                           label_smoothing=label_smoothing)  # fmt: skip


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        t = literal(params["target"], "int64", device)
    else:
        n, c = params["shape"]
        x = rand_tensor((n, c), "float32", params["mode"], gen, device)
        t = rand_int((n,), 0, c, gen, device)
        if params.get("ignore"):
            t = torch.where(rand_int((n,), 0, 8, gen, device) == 0, torch.full_like(t, -100), t)
    kwargs = {k: params[k] for k in ("dim", "ignore_index", "reduction", "label_smoothing") if k in params}
    if "weight" in params:
        kwargs["weight"] = literal(params["weight"], "float32", device)
    elif params.get("random_weight"):
        kwargs["weight"] = rand_tensor((x.shape[1],), "float32", "uniform", gen, device) + 0.1
    return Call((x, t), kwargs)


def _flops(input, target, dim=1, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    return float(3 * input.numel() + input.shape[0])


def _bytes(input, target, dim=1, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    n_out = input.shape[0] if reduction == "none" else 1
    n_w = weight.numel() if weight is not None else 0
    return float((input.numel() + n_w + n_out) * input.element_size() + target.numel() * target.element_size())


_X = [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
_FIX = {"values": _X, "target": [2, 1]}
_RAND = {"shape": (64, 100), "reduction": "mean", "label_smoothing": 0.1}

TASK = Task(
    entry="fused_cross_entropy_log_softmax",
    dtypes=("float32", "int64"),
    signature=(
        "fused_cross_entropy_log_softmax(input: torch.Tensor, target: torch.Tensor, dim: int = 1, "
        "weight: torch.Tensor | None = None, ignore_index: int = -100, reduction: str = 'mean', "
        "label_smoothing: float = 0.0) -> torch.Tensor"
    ),
    description=(
        "For (N, C) fp32 logits `input` and int64 class targets (N,): lp = log_softmax(input, dim), then return "
        "torch.nn.functional.cross_entropy(lp, target, weight, ignore_index, reduction, label_smoothing), which "
        "applies log_softmax over the class dim again (a no-op on log-probabilities up to rounding). Per row: "
        "(1 - s) * w[t] * (-lp[t]) + s / C * sum_c w[c] * (-lp[c]) for smoothing s; rows with target == "
        "ignore_index contribute 0. 'mean' divides the sum by the summed w[t] of the non-ignored rows, 'sum' "
        "sums (0-d results), 'none' returns the (N,) losses."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, dict(_FIX)),
        Case("fixed_smoothing", FIXED, {**_FIX, "label_smoothing": 0.1}),
        Case("fixed_weight", FIXED, {**_FIX, "weight": [1.0, 0.5, 2.0]}),
        Case("fixed_sum", FIXED, {**_FIX, "reduction": "sum"}),
        Case("fixed_ignore", FIXED, {"values": _X, "target": [2, -100]}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_weight_ignore", STANDARD, {**_RAND, "mode": "standard", "random_weight": True, "ignore": True}),
        Case("standard_none_ignore", STANDARD, {**_RAND, "mode": "standard", "reduction": "none", "ignore": True}),
    ],
    perf=[Case(f"B2^{e}", PERF, {"shape": (2**e, 128), "mode": "uniform"}) for e in (17, 19, 21)],
    flops=_flops,
    bytes=_bytes,
    notes="added ignore_index and reduction='none' cases; perf B capped at 2^21.",
)
