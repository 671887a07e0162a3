"""Math/signbit: whether each fp32 element has its sign bit set (negatives and -0.0), as a bool tensor.

kbx adds an `out=` case (bool out tensor) judged after the call, and a fixed case with infinities.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.signbit(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"out": torch.zeros(x.shape, dtype=torch.bool, device=device)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return float(input.numel())


def _bytes(input, out=None):
    return float(input.numel() * (input.element_size() + 1))


TASK = Task(
    entry="signbit",
    dtypes=("float32", "bool"),
    signature="signbit(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return a new bool tensor of the input's shape that is True where the fp32 element's sign bit is set: "
        "negative numbers, -inf and -0.0 (so a plain x < 0 test is wrong for -0.0). If `out` (a bool tensor of the "
        "same shape) is given, write into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_signed_zeros", FIXED, {"values": [1.0, -1.0, 0.0, -0.0]}),
        Case("fixed_positive", FIXED, {"values": [3.5, 2.2, 0.1]}),
        Case("fixed_negative", FIXED, {"values": [-3.5, -2.2, -0.1]}),
        Case("fixed_magnitudes", FIXED, {"values": [1e10, -1e10, 1e-10, -1e-10]}),
        Case("fixed_infinities", FIXED, {"values": [float("inf"), float("-inf"), -0.0, 1e-45, -1e-45]}),
        Case("fixed_out", FIXED, {"values": [1.0, -1.0, 0.0, -0.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (25, 26, 27, 28)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case and a fixed case with infinities and denormals.",
)
