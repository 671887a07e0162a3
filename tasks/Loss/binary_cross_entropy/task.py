"""Loss/binary_cross_entropy: binary cross-entropy of fp32 probabilities against (soft) targets.

kbx departures: upstream's fixed cases drew their probabilities at random; kbx writes them out.
Perf inputs are 2^24..2^27 elements (upstream at most 2^23). The fp32 rtol is 1e-4 for the
reduced outputs' summation order (see the tolerance comment).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
              reduction: str = "mean") -> torch.Tensor:  # fmt: skip
    return torch.nn.functional.binary_cross_entropy(input, target, weight=weight, reduction=reduction)


_P8 = [0.62, 0.13, 0.91, 0.45, 0.27, 0.77, 0.05, 0.58]
_T8 = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
_W8 = [0.3, 0.9, 0.1, 0.6, 1.0, 0.25, 0.8, 0.45]
_P16 = [[0.1, 0.9, 0.5, 0.3], [0.8, 0.2, 0.6, 0.4], [0.99, 0.01, 0.7, 0.35], [0.45, 0.55, 0.15, 0.85]]
_T16 = [[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]


def make_inputs(params, gen, device) -> Call:
    reduction = params.get("reduction", "mean")
    if "p" in params:
        p, t = literal(params["p"], "float32", device), literal(params["t"], "float32", device)
        w = literal(params["w"], "float32", device) if "w" in params else None
        return Call((p, t), {"weight": w, "reduction": reduction})
    shape, mode = params["shape"], params["mode"]
    if params.get("hard"):  # perf: p = sigmoid(randn), hard 0/1 targets
        p = torch.sigmoid(rand_tensor(shape, "float32", "standard", gen, device))
        t = (rand_tensor(shape, "float32", "uniform", gen, device) < 0.5).float()
    else:
        logits = rand_tensor(shape, "float32", mode, gen, device).clamp(-20.0, 20.0)
        p = torch.sigmoid(logits).clamp(1e-6, 1.0 - 1e-6)
        t = torch.sigmoid(rand_tensor(shape, "float32", mode, gen, device))
    w = rand_tensor(shape, "float32", "uniform", gen, device) if params.get("weighted") else None
    return Call((p, t), {"weight": w, "reduction": reduction})


def _flops(input, target, weight=None, reduction="mean"):
    return 22.0 * input.numel()


def _bytes(input, target, weight=None, reduction="mean"):
    reads = 2 + (weight is not None)
    out = input.numel() if reduction == "none" else 1
    return float((reads * input.numel() + out) * input.element_size())


def _rand(name, kind, shape, mode, **extra):
    return Case(name, kind, {"shape": shape, "mode": mode, **extra})


TASK = Task(
    entry="binary_cross_entropy",
    dtypes=("float32",),
    signature=(
        "binary_cross_entropy(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None, "
        "reduction: str = 'mean') -> torch.Tensor"
    ),
    description=(
        "Binary cross-entropy as torch.nn.functional.binary_cross_entropy for fp32 probabilities input in "
        "(0, 1) and fp32 targets in [0, 1] of the same shape: l = -w * (t * max(log(p), -100) + (1 - t) * "
        "max(log(1 - p), -100)), with w the optional elementwise weight (1 when None). reduction='none' "
        "returns l (input's shape); 'sum' returns sum(l) and 'mean' sum(l) / numel (weights are not "
        "normalised), both as 0-d fp32 tensors."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mean", FIXED, {"p": _P8, "t": _T8}),
        Case("fixed_weighted_mean", FIXED, {"p": _P8, "t": _T8, "w": _W8}),
        Case("fixed_none_4x4", FIXED, {"p": _P16, "t": _T16, "reduction": "none"}),
        Case("fixed_saturated_sum", FIXED, {"p": [0.0, 1.0, 0.0, 1.0], "t": [1.0, 0.0, 0.0, 1.0],
                                            "reduction": "sum"}),  # fmt: skip
        _rand("standard_1024_mean", STANDARD, (1024,), "standard"),
        _rand("standard_1024_weighted", STANDARD, (1024,), "standard", weighted=True),
        _rand("standard_64x128_none", STANDARD, (64, 128), "standard", reduction="none"),
        _rand("standard_64x128_sum", STANDARD, (64, 128), "standard", weighted=True, reduction="sum"),
        _rand("outlier_1024_mean", OUTLIER, (1024,), "outlier"),
        _rand("outlier_64x128_weighted", OUTLIER, (64, 128), "outlier", weighted=True),
        _rand("outlier_64x128_none", OUTLIER, (64, 128), "outlier", reduction="none"),
    ],
    perf=[_rand(f"n2^{e}", PERF, (2**e,), "standard", hard=True) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    # The mean/sum of up to 2^27 positive terms: a blocked or atomic fp32 summation differs from
    # torch's by a few 1e-6 relative, over the default rtol 1e-5 in unlucky draws.
    tolerance=Tolerance(rtol={"float32": 1e-4}),
    notes="literal fixed probabilities, adds sum and saturated (p = 0 or 1) cases; perf 2^24..2^27; fp32 rtol 1e-4",
)
