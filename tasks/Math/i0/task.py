"""Math/i0: the modified Bessel function of the first kind, order zero, elementwise in fp32, optionally into `out`.

kbx adds a case passing `out`, judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.special.i0(input_tensor, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device).clamp(-10.0, 10.0)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input_tensor, out=None):
    return 10.0 * input_tensor.numel()


def _bytes(input_tensor, out=None):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="i0",
    dtypes=("float32",),
    signature="i0(input_tensor: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return I0(x), the modified Bessel function of the first kind of order zero "
        "(sum over k >= 0 of (x/2)^(2k) / (k!)^2, an even function with I0(0) = 1), elementwise as a new fp32 "
        "tensor of the input's shape. If `out` is given, write into it "
        "and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [0.0, 1.0, 2.0]}),
        Case("fixed_mixed", FIXED, {"values": [-1.0, -2.0, 3.0, 4.0]}),
        Case("fixed_symmetric", FIXED, {"values": [-3.0, 0.0, 3.0]}),
        Case("fixed_halves", FIXED, {"values": [0.5, 1.5, 2.5]}),
        Case("fixed_out", FIXED, {"values": [-3.0, 0.0, 3.0, 9.5], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
