"""Math/trunc: rounding toward zero elementwise in fp32, optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.trunc(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "scale" in params:
        x = x * params["scale"]
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 1.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="trunc",
    dtypes=("float32",),
    signature="trunc(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return trunc(x) (x rounded toward zero, as a float) elementwise as a new fp32 tensor of the input's "
        "shape (the sign of zero is kept, e.g. trunc(-0.1) = -0.0)."
        "If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mixed", FIXED, {"values": [1.5, -2.7, 3.3, -4.8]}),
        Case("fixed_positive", FIXED, {"values": [0.0, 2.9, 5.1]}),
        Case("fixed_large", FIXED, {"values": [12345.678, -98765.432]}),
        Case("fixed_near_zero", FIXED, {"values": [-0.1, 0.0, 0.1, -1.9, 1.9]}),
        Case("fixed_out", FIXED, {"values": [1.5, -2.7, 3.3, -4.8], "out": True}),
        Case("standard_wide", STANDARD, {"shape": (64, 64), "mode": "standard", "scale": 1000.0}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard", "scale": 1000.0}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
