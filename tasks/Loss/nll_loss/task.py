"""Loss/nll_loss: negative log-likelihood of class targets given (N, C) fp32 log-probabilities.

kbx adds 'sum' and 'none' reduction cases (upstream tested only 'mean'); since version 2 they are
extra cases (beyond upstream's contract: reported, never deciding the verdict). Upstream's first fixed
case drew its 4x3 logits at random; kbx writes fixed logits out literally. Perf inputs are (B, 100)
with B = 2^19..2^22 (upstream: (B, 1000), B <= 2^15, a few microseconds of work).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(
    input: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> torch.Tensor:
    return torch.nn.functional.nll_loss(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


_LOGITS = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 0.0, 1.0], [0.3, 0.9, -0.4]]


def make_inputs(params, gen, device) -> Call:
    if "targets" in params:
        logp = torch.log_softmax(literal(_LOGITS, "float32", device), dim=1)
        target = literal(params["targets"], "int64", device)
        weight = literal(params["weight"], "float32", device) if "weight" in params else None
    else:
        n, c = params["shape"]
        logits = rand_tensor((n, c), "float32", params["mode"], gen, device)
        logp = torch.log_softmax(logits, dim=1) if params.get("log_softmax", True) else logits
        target = rand_int((n,), 0, c, gen, device)
        weight = None
        if params.get("weighted"):
            weight = rand_tensor((c,), "float32", "uniform", gen, device) + 0.1
        if params.get("ignore_first"):
            target[0] = -100
    return Call((logp, target), {"weight": weight, "reduction": params.get("reduction", "mean")})


def _flops(input, target, weight=None, ignore_index=-100, reduction="mean"):
    return float(input.shape[0])


def _bytes(input, target, weight=None, ignore_index=-100, reduction="mean"):
    # targets read, one 32-byte sector gathered per row of input, the (tiny) weights and the output
    n = input.shape[0]
    out = n if reduction == "none" else 1
    w = 0 if weight is None else weight.numel()
    return float(n * target.element_size() + 32 * n + (w + out) * input.element_size())


def _rand(name, kind, mode, extra_case=False, **extra):
    return Case(name, kind, {"shape": (32, 10), "mode": mode, **extra}, extra=extra_case)


TASK = Task(
    entry="nll_loss",
    dtypes=("float32", "int64"),
    signature=(
        "nll_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None, "
        "ignore_index: int = -100, reduction: str = 'mean') -> torch.Tensor"
    ),
    description=(
        "Negative log-likelihood loss as torch.nn.functional.nll_loss for fp32 log-probabilities input of shape "
        "(N, C) and int64 class targets of shape (N,). Each row's loss is -w[t] * input[i, t] with t = target[i] "
        "and w the optional per-class weight (all ones when None); rows whose target equals ignore_index "
        "contribute 0. reduction='none' returns the (N,) losses, 'sum' their sum, and 'mean' their sum divided "
        "by the sum of w[t] over the non-ignored rows (0-d fp32 results)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mean", FIXED, {"targets": [0, 1, 2, 1]}),
        Case("fixed_weighted", FIXED, {"targets": [0, 1, 2, 0], "weight": [1.0, 2.0, 1.5]}),
        Case("fixed_ignore_index", FIXED, {"targets": [0, -100, 2, 1]}),
        Case("fixed_sum", FIXED, {"targets": [2, 1, 0, 1], "reduction": "sum"}, extra=True),
        Case("fixed_none_weighted", FIXED,
             {"targets": [0, -100, 2, 1], "weight": [1.0, 2.0, 1.5], "reduction": "none"}, extra=True),  # fmt: skip
        _rand("standard", STANDARD, "standard"),
        _rand("standard_weighted", STANDARD, "standard", weighted=True),
        _rand("standard_ignore", STANDARD, "standard", ignore_first=True),
        _rand("standard_weighted_ignore_none", STANDARD, "standard", weighted=True, ignore_first=True,
              reduction="none", extra_case=True),  # fmt: skip
        _rand("standard_sum_large", STANDARD, "standard", shape=(4096, 100), weighted=True, reduction="sum",
              extra_case=True),  # fmt: skip
        _rand("outlier", OUTLIER, "outlier"),
        _rand("outlier_weighted", OUTLIER, "outlier", weighted=True),
        _rand("outlier_ignore", OUTLIER, "outlier", ignore_first=True),
    ],
    # Uniform values stand in for log-probabilities (nll_loss never checks them). The op reads one
    # element per row, so only the batch size sets the work: (B, 100) with B up to 2^22 keeps the
    # GPU busy while the largest input stays under 2 GB (upstream: (B, 1000), B <= 2^15).
    perf=[
        Case(f"b2^{e}", PERF, {"shape": (2**e, 100), "mode": "uniform", "log_softmax": False})
        for e in (19, 20, 21, 22)
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # the sum and none cases became extra (the GEAK corpus's nll_loss kernels fail only them)
    notes=(
        "fixed logits written literally; kbx adds sum/none (extra) and weighted+ignore cases; "
        "perf (B, 100) with B up to 2^22"
    ),
)
