"""Math/bessel_j1: the Bessel function of the first kind of order one, elementwise in fp32, optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.special.bessel_j1(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 100.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="bessel_j1",
    dtypes=("float32",),
    signature="bessel_j1(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return J1(x), the Bessel function of the first kind of order one (an odd function, J1(0) = 0), "
        "elementwise as a new fp32 tensor of the input's shape."
        "If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_one", FIXED, {"values": [1.0]}),
        Case("fixed_positive", FIXED, {"values": [0.0, 1.0, 2.0, 3.0]}),
        Case("fixed_negative", FIXED, {"values": [-1.0, -2.0, -3.0]}),
        Case("fixed_linspace", FIXED, {"values": [-5.0 + 10.0 * i / 9 for i in range(10)]}),  # linspace(-5, 5, 10)
        Case("fixed_out", FIXED, {"values": [0.0, 1.0, 2.0, 3.0], "out": True}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard"}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
