"""Fusion/fused_hstack_div: torch.div(torch.hstack(tensors), divisor, rounding_mode) for a list of tensors.

kbx departures: kbx adds cases with three inputs of different widths, a negative divisor and integer
inputs (upstream: two equal inputs and divisor 2). Perf: two 1-D inputs of 2^23..2^26 elements.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(tensors, divisor, *, rounding_mode=None, out=None) -> torch.Tensor:
    y = torch.div(torch.hstack(tensors), divisor, rounding_mode=rounding_mode)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        ts = [literal(v, params["dtype"], device) for v in params["values"]]
    elif params.get("dtype") == "int64":
        ts = [rand_int(s, -50, 50, gen, device) for s in params["shapes"]]
    else:
        ts = [rand_tensor(s, "float32", params["mode"], gen, device) for s in params["shapes"]]
    kwargs = {"rounding_mode": params["rounding_mode"]} if "rounding_mode" in params else {}
    return Call((ts, params.get("divisor", 2.0)), kwargs)


def _flops(tensors, divisor, *, rounding_mode=None, out=None):
    return float(sum(t.numel() for t in tensors))


def _bytes(tensors, divisor, *, rounding_mode=None, out=None):
    n = sum(t.numel() for t in tensors)
    out_size = tensors[0].element_size() if tensors[0].is_floating_point() or rounding_mode is not None else 4
    return float(sum(t.numel() * t.element_size() for t in tensors) + n * out_size)


_RAND = {"shapes": [(128, 64), (128, 64)], "divisor": 2.0}

TASK = Task(
    entry="fused_hstack_div",
    dtypes=("float32", "int64"),
    signature=(
        "fused_hstack_div(tensors: list[torch.Tensor], divisor: float, *, rounding_mode: str | None = None, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Concatenate the tensors horizontally like torch.hstack (along dim 1, or along dim 0 when they are 1-D), "
        "then divide by the Python number `divisor` like torch.div: rounding_mode None is true division (integer "
        "inputs promote to fp32), 'trunc' rounds the quotient toward zero and 'floor' rounds it down (keeping "
        "the promoted dtype). Return the result (written into `out` and returned when `out` is given)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_int_true_div", FIXED, {"values": [[1, 2], [3, 4]], "dtype": "int64"}),
        Case("fixed_floor", FIXED, {"values": [[1.5, 2.5], [3.5, 4.5]], "dtype": "float32", "rounding_mode": "floor"}),
        Case("fixed_trunc", FIXED, {"values": [[1.5, 2.5], [3.5, 4.5]], "dtype": "float32", "rounding_mode": "trunc"}),
        Case("fixed_neg_floor", FIXED, {"values": [[-1.5, 2.5], [-3.5, -4.0]], "dtype": "float32",
                                        "rounding_mode": "floor"}),  # fmt: skip
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_floor", STANDARD, {**_RAND, "mode": "standard", "rounding_mode": "floor"}),
        Case("outlier_floor", OUTLIER, {**_RAND, "mode": "outlier", "rounding_mode": "floor"}),
        Case("standard_three_trunc", STANDARD, {"shapes": [(64, 10), (64, 3), (64, 20)], "divisor": -1.5,
                                                "rounding_mode": "trunc", "mode": "standard"}),  # fmt: skip
        Case("standard_int_true_div", STANDARD, {"shapes": [(40, 7), (40, 9)], "dtype": "int64", "divisor": 4.0,
                                                 "mode": "standard"}),  # fmt: skip
        Case("standard_3d", STANDARD, {"shapes": [(4, 5, 6), (4, 2, 6)], "divisor": 0.5, "mode": "standard"}),
    ],
    perf=[Case(f"2x2^{e}", PERF, {"shapes": [(2**e,), (2**e,)], "mode": "uniform"}) for e in (23, 24, 25, 26)],
    flops=_flops,
    bytes=_bytes,
    notes="extra cases: three inputs, negative divisor, integer inputs, 3-D; perf 2x2^23..2x2^26.",
)
