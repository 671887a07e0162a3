"""Activation/leaky_relu: x where x >= 0, negative_slope * x elsewhere; optionally in place.

kbx departure: upstream checked only the returned values of the in-place case; kbx also judges
the input tensor after the call (inplace=True must leave the result in `input`, and inplace=False
must leave `input` untouched).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, negative_slope: float = 0.01, inplace: bool = False) -> torch.Tensor:
    return torch.nn.functional.leaky_relu(input, negative_slope=negative_slope, inplace=inplace)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("negative_slope", "inplace") if k in params}
    return Call((x,), kwargs)


def _flops(input, negative_slope=0.01, inplace=False):
    return float(input.numel())


def _bytes(input, negative_slope=0.01, inplace=False):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="leaky_relu",
    dtypes=("float32",),
    signature="leaky_relu(input: torch.Tensor, negative_slope: float = 0.01, inplace: bool = False) -> torch.Tensor",
    description=(
        "Apply leaky ReLU elementwise: keep x where x >= 0, return negative_slope * x where x < 0. "
        "With inplace=False return a new tensor and leave `input` unchanged; with inplace=True write the "
        "result into `input` and return that same tensor."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_slope01", FIXED, {"values": [-2.0, 0.0, 2.0], "negative_slope": 0.1}),
        Case("fixed_inplace", FIXED, {"values": [-3.0, 0.0, 3.0], "inplace": True}),
        Case("fixed_range", FIXED, {"values": [-4.0, -2.0, 0.0, 2.0, 4.0]}),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard", "negative_slope": 0.1}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier", "negative_slope": 0.1}),
        Case("standard_inplace", STANDARD, {"shape": (1024, 1024), "mode": "standard", "inplace": True}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="in-place case also judged on the mutated input, not only on the return value.",
)
