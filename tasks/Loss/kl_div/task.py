"""Loss/kl_div: pointwise KL divergence of fp32 log-probabilities against probability or log-probability targets.

kbx departures: adds 'sum' and 'mean' cases and a literal case whose target holds exact zeros (the
0 * log 0 = 0 convention). Perf inputs are (B, 1024) with B = 2^14..2^17 (upstream at most 2^13).
The fp32 rtol is 1e-4 for the reduced outputs' summation order.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, target: torch.Tensor, reduction: str = "batchmean",
              log_target: bool = False) -> torch.Tensor:  # fmt: skip
    return torch.nn.functional.kl_div(input, target, reduction=reduction, log_target=log_target)


def make_inputs(params, gen, device) -> Call:
    kwargs = {"reduction": params.get("reduction", "batchmean"), "log_target": params.get("log_target", False)}
    if "target" in params:
        x = torch.log_softmax(literal(params["logits"], "float32", device), dim=-1)
        return Call((x, literal(params["target"], "float32", device)), kwargs)
    shape, mode = params["shape"], params["mode"]
    x = torch.log_softmax(rand_tensor(shape, "float32", mode, gen, device), dim=-1)
    t_logits = rand_tensor(shape, "float32", mode, gen, device)
    t = torch.log_softmax(t_logits, dim=-1) if kwargs["log_target"] else torch.softmax(t_logits, dim=-1)
    return Call((x, t), kwargs)


def _flops(input, target, reduction="batchmean", log_target=False):
    return 6.0 * input.numel()


def _bytes(input, target, reduction="batchmean", log_target=False):
    out = input.numel() if reduction == "none" else 1
    return float((2 * input.numel() + out) * input.element_size())


def _rand(name, kind, shape, mode, **extra):
    return Case(name, kind, {"shape": shape, "mode": mode, **extra})


_LOGITS = [[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.75, 0.3]]
_ZERO_T = [[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]]

TASK = Task(
    entry="kl_div",
    dtypes=("float32",),
    signature=(
        "kl_div(input: torch.Tensor, target: torch.Tensor, reduction: str = 'batchmean', "
        "log_target: bool = False) -> torch.Tensor"
    ),
    description=(
        "KL divergence as torch.nn.functional.kl_div, where the fp32 input holds log-probabilities and target "
        "has input's shape. Pointwise: l = target * (log(target) - input), taken as 0 where target == 0, when "
        "log_target is False; l = exp(target) * (target - input) when log_target is True. reduction='none' "
        "returns l; 'sum' its sum; 'mean' sum / numel; 'batchmean' sum / input.size(0) (0-d fp32 results)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_zero_target_none", FIXED, {"logits": _LOGITS, "target": _ZERO_T, "reduction": "none"}),
        Case("fixed_zero_target_batchmean", FIXED, {"logits": _LOGITS, "target": _ZERO_T}),
        _rand("softmax_4x8_batchmean", STANDARD, (4, 8), "standard"),
        _rand("log_target_2x5_batchmean", STANDARD, (2, 5), "standard", log_target=True),
        _rand("none_2x3", STANDARD, (2, 3), "standard", reduction="none"),
        _rand("standard_batchmean", STANDARD, (16, 32), "standard"),
        _rand("standard_none", STANDARD, (16, 32), "standard", reduction="none"),
        _rand("standard_log_target", STANDARD, (16, 32), "standard", log_target=True),
        _rand("standard_sum_log_target", STANDARD, (64, 100), "standard", log_target=True, reduction="sum"),
        _rand("standard_mean", STANDARD, (64, 100), "standard", reduction="mean"),
        _rand("outlier_batchmean", OUTLIER, (16, 32), "outlier"),
        _rand("outlier_none", OUTLIER, (16, 32), "outlier", reduction="none"),
        _rand("outlier_log_target", OUTLIER, (16, 32), "outlier", log_target=True),
    ],
    perf=[_rand(f"b2^{e}", PERF, (2**e, 1024), "standard") for e in (14, 15, 16, 17)],
    flops=_flops,
    bytes=_bytes,
    # batchmean/sum over up to 2^27 terms of both signs: blocked fp32 sums differ from torch's by a
    # few 1e-6 relative, over the default rtol 1e-5 in unlucky draws.
    tolerance=Tolerance(rtol={"float32": 1e-4}),
    notes="adds sum/mean and literal zero-target cases; perf (2^14..2^17, 1024); fp32 rtol 1e-4",
)
