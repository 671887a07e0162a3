"""Loss/cross_entropy: softmax cross-entropy of fp32 logits against int64 class targets.

kbx departures: upstream's first fixed logits were drawn at random; kbx writes them out. kbx adds
weighted, 'sum' and 'none' cases. Perf inputs are (B, 1000) with B = 2^15..2^17 (upstream at most
2^15). The fp32 rtol is 1e-4 for the reduced outputs' summation order.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
              ignore_index: int = -100, reduction: str = "mean") -> torch.Tensor:  # fmt: skip
    return torch.nn.functional.cross_entropy(input, target, weight=weight, ignore_index=ignore_index,
                                             reduction=reduction)  # fmt: skip


_LOGITS = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 0.0, 1.0], [0.3, 0.9, -0.4]]


def make_inputs(params, gen, device) -> Call:
    kwargs = {"reduction": params.get("reduction", "mean")}
    if "targets" in params:
        x = literal(_LOGITS, "float32", device)
        t = literal(params["targets"], "int64", device)
        if "weight" in params:
            kwargs["weight"] = literal(params["weight"], "float32", device)
        return Call((x, t), kwargs)
    n, c, *spatial = params["shape"]
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    t = rand_int((n, *spatial), 0, c, gen, device)
    if params.get("weighted"):
        kwargs["weight"] = rand_tensor((c,), "float32", "uniform", gen, device) + 0.1
    if params.get("ignore_first"):
        t.view(-1)[0] = -100
    return Call((x, t), kwargs)


def _flops(input, target, weight=None, ignore_index=-100, reduction="mean"):
    c = input.shape[1]
    return float(target.numel() * ((c - 1) + c + 8 * c + (c - 1) + 8 + 2))


def _bytes(input, target, weight=None, ignore_index=-100, reduction="mean"):
    out = target.numel() if reduction == "none" else 1
    w = 0 if weight is None else weight.numel()
    return float((input.numel() + w + out) * input.element_size() + target.numel() * target.element_size())


def _rand(name, kind, shape, mode, **extra):
    return Case(name, kind, {"shape": shape, "mode": mode, **extra})


TASK = Task(
    entry="cross_entropy",
    dtypes=("float32", "int64"),
    signature=(
        "cross_entropy(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None, "
        "ignore_index: int = -100, reduction: str = 'mean') -> torch.Tensor"
    ),
    description=(
        "Cross-entropy as torch.nn.functional.cross_entropy (no label smoothing) for fp32 logits input of shape "
        "(N, C) or (N, C, d1, ...) and int64 class targets of shape (N,) or (N, d1, ...): the class dim is 1, "
        "and each position's loss is -w[t] * log_softmax(input)[t] with t its target and w the optional "
        "per-class weight (ones when None); positions whose target equals ignore_index contribute 0. "
        "reduction='none' returns the per-position losses (target's shape), 'sum' their sum, and 'mean' "
        "their sum divided by the sum of w[t] over non-ignored positions (0-d fp32 results)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mean", FIXED, {"targets": [0, 1, 2, 1]}),
        Case("fixed_ignore_index", FIXED, {"targets": [0, -100, 2, 1]}),
        Case("fixed_weighted_none", FIXED, {"targets": [2, 0, -100, 1], "weight": [1.0, 2.0, 0.5],
                                            "reduction": "none"}),  # fmt: skip
        _rand("spatial_2x3x4x4", STANDARD, (2, 3, 4, 4), "standard"),
        _rand("standard", STANDARD, (32, 10), "standard"),
        _rand("standard_ignore", STANDARD, (32, 10), "standard", ignore_first=True),
        _rand("standard_spatial", STANDARD, (2, 10, 8, 8), "standard"),
        _rand("standard_weighted_sum", STANDARD, (64, 1000), "standard", weighted=True, reduction="sum"),
        _rand("standard_weighted_ignore_mean", STANDARD, (2, 7, 5, 3), "standard", weighted=True, ignore_first=True),
        _rand("outlier", OUTLIER, (32, 10), "outlier"),
        _rand("outlier_ignore", OUTLIER, (32, 10), "outlier", ignore_first=True),
        _rand("outlier_spatial_none", OUTLIER, (2, 10, 8, 8), "outlier", reduction="none"),
    ],
    perf=[_rand(f"b2^{e}", PERF, (2**e, 1000), "uniform") for e in (15, 16, 17)],
    flops=_flops,
    bytes=_bytes,
    # 'mean'/'sum' over up to 2^17 positive row losses: blocked fp32 sums differ from torch's by a
    # few 1e-6 relative, over the default rtol 1e-5 in unlucky draws.
    tolerance=Tolerance(rtol={"float32": 1e-4}),
    notes="literal fixed logits; adds weighted/sum/none cases; perf (2^15..2^17, 1000); fp32 rtol 1e-4",
)
