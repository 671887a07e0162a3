"""Loss/mse_loss: mean squared error between two fp32 tensors, reduced by 'mean', 'sum' or 'none'."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    return torch.nn.functional.mse_loss(input, target, reduction=reduction)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        y = literal(params["targets"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        y = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x, y), {"reduction": params.get("reduction", "mean")})


def _flops(input, target, reduction="mean"):
    return 2.0 * input.numel()


def _bytes(input, target, reduction="mean"):
    out = input.numel() if reduction == "none" else 1
    return (2.0 * input.numel() + out) * input.element_size()


_FIXED_X = [1.0, 2.0, 3.0, -1.5]
_FIXED_T = [1.0, 0.0, 5.0, 0.5]


def _case(name, kind, shape, mode, reduction):
    return Case(name, kind, {"shape": shape, "mode": mode, "reduction": reduction})


TASK = Task(
    entry="mse_loss",
    dtypes=("float32",),
    signature="mse_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = 'mean') -> torch.Tensor",
    description=(
        "Compute the squared differences (input - target)^2 of two fp32 tensors of the same shape. "
        "With reduction='none' return them as a tensor of that shape; with 'sum' return their sum and "
        "with 'mean' their average over all elements, each as a 0-d fp32 tensor."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mean", FIXED, {"values": _FIXED_X, "targets": _FIXED_T}),
        Case("fixed_sum", FIXED, {"values": _FIXED_X, "targets": _FIXED_T, "reduction": "sum"}),
        _case("vector_mean", STANDARD, (10,), "standard", "mean"),
        _case("square_none", STANDARD, (3, 3), "standard", "none"),
        _case("4d_mean", STANDARD, (2, 3, 8, 8), "standard", "mean"),
        _case("standard_mean", STANDARD, (128, 256), "standard", "mean"),
        _case("standard_sum", STANDARD, (128, 256), "standard", "sum"),
        _case("standard_none", STANDARD, (128, 256), "standard", "none"),
        _case("outlier_mean", OUTLIER, (128, 256), "outlier", "mean"),
        _case("outlier_sum", OUTLIER, (128, 256), "outlier", "sum"),
    ],
    perf=[_case(f"n2^{e}", PERF, (2**e,), "uniform", "mean") for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
