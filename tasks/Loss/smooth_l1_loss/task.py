"""Loss/smooth_l1_loss: the smooth L1 (Huber-like) loss between two fp32 tensors.

kbx departures: upstream's fixed cases drew random inputs; kbx adds a literal case that crosses
the beta threshold exactly and a beta = 0 (plain L1) case. Perf inputs are 2^24..2^27 elements
(upstream at most 2^24). The fp32 rtol is 1e-4 for the reduced outputs' summation order.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, target: torch.Tensor, beta: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    return torch.nn.functional.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def make_inputs(params, gen, device) -> Call:
    kwargs = {k: params[k] for k in ("beta", "reduction") if k in params}
    if "a" in params:
        return Call((literal(params["a"], "float32", device), literal(params["b"], "float32", device)), kwargs)
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    y = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x, y), kwargs)


def _flops(input, target, beta=1.0, reduction="mean"):
    return 6.0 * input.numel()


def _bytes(input, target, beta=1.0, reduction="mean"):
    out = input.numel() if reduction == "none" else 1
    return float((2 * input.numel() + out) * input.element_size())


def _rand(name, kind, shape, mode, **extra):
    return Case(name, kind, {"shape": shape, "mode": mode, **extra})


TASK = Task(
    entry="smooth_l1_loss",
    dtypes=("float32",),
    signature=(
        "smooth_l1_loss(input: torch.Tensor, target: torch.Tensor, beta: float = 1.0, reduction: str = 'mean') "
        "-> torch.Tensor"
    ),
    description=(
        "Smooth L1 loss as torch.nn.functional.smooth_l1_loss for fp32 tensors of equal shape: with "
        "d = |input - target|, l = 0.5 * d^2 / beta where d < beta, else d - 0.5 * beta (beta = 0 gives plain "
        "|d|). reduction='none' returns l (input's shape); 'mean' and 'sum' return its mean or sum as a 0-d "
        "fp32 tensor. Note beta comes before reduction in the signature."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_threshold", FIXED, {"a": [0.0, 1.0, 2.0, -3.0, 0.5, 1.5], "b": [0.0, 0.0, 0.5, 0.0, 1.0, 0.5]}),
        Case("fixed_threshold_beta_half_none", FIXED, {"a": [0.0, 1.0, 2.0, -3.0, 0.5, 1.5],
                                                       "b": [0.0, 0.0, 0.5, 0.0, 1.0, 0.5],
                                                       "beta": 0.5, "reduction": "none"}),  # fmt: skip
        _rand("default_32", STANDARD, (32,), "standard"),
        _rand("beta_half_32", STANDARD, (32,), "standard", beta=0.5),
        _rand("none_4x8", STANDARD, (4, 8), "standard", reduction="none"),
        _rand("beta_zero_sum", STANDARD, (1000,), "standard", beta=0.0, reduction="sum"),
        _rand("standard_mean", STANDARD, (4096,), "standard", beta=1.0),
        _rand("standard_sum", STANDARD, (4096,), "standard", beta=0.5, reduction="sum"),
        _rand("standard_none", STANDARD, (32, 128), "standard", beta=0.1, reduction="none"),
        _rand("outlier_mean", OUTLIER, (4096,), "outlier", beta=1.0),
        _rand("outlier_sum", OUTLIER, (4096,), "outlier", beta=0.5, reduction="sum"),
        _rand("outlier_none", OUTLIER, (32, 128), "outlier", beta=0.1, reduction="none"),
    ],
    perf=[_rand(f"n2^{e}", PERF, (2**e,), "uniform") for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    # mean/sum of up to 2^27 non-negative terms: a blocked fp32 sum differs from torch's by a
    # few 1e-6 relative, over the default rtol 1e-5 in unlucky draws.
    tolerance=Tolerance(rtol={"float32": 1e-4}),
    notes="adds literal threshold and beta=0 cases; perf 2^24..2^27 (upstream <= 2^24); fp32 rtol 1e-4",
)
