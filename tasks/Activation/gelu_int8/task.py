"""Activation/gelu_int8: GELU on an int8 tensor, evaluated in fp32 and truncated back to int8."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int


def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return torch.nn.functional.gelu(input.to(torch.float32), approximate=approximate).to(torch.int8)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "int8", device)
    else:
        x = rand_int(params["shape"], params["low"], params["high"], gen, device, dtype="int8")
    return Call((x,), {"approximate": params.get("approximate", "none")})


def _flops(input, approximate="none"):
    return 8.0 * input.numel()


def _bytes(input, approximate="none"):
    return 2.0 * input.numel() * input.element_size()


_SMALL = [-10, -5, 0, 5, 10]

TASK = Task(
    entry="gelu_int8",
    dtypes=("int8",),
    signature="gelu_int8(input: torch.Tensor, approximate: str = 'none') -> torch.Tensor",
    description=(
        "Convert the int8 input to fp32, apply GELU elementwise (approximate='none': x * 0.5 * (1 + erf(x / sqrt(2))); "
        "approximate='tanh': 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))) in fp32, then convert back to "
        "int8 by truncation toward zero (a plain cast, no rounding). Return a new int8 tensor of the input's shape. "
        "The fp32 evaluation matters at the edges: e.g. the erf form gives GELU(5) = 4.9999986 (truncates to 4), while "
        "for x >= 6 the fp32 result rounds to x itself (gives x)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": _SMALL}),
        Case("fixed_edges", FIXED, {"values": [-128, -127, -1, 0, 1, 126, 127]}),
        Case("fixed_2d", FIXED, {"values": [[-10, -5, 0], [5, 10, 20]]}),
        Case("fixed_small_tanh", FIXED, {"values": _SMALL, "approximate": "tanh"}),
        Case("standard_none", STANDARD, {"shape": (4096,), "low": -20, "high": 20}),
        Case("standard_tanh", STANDARD, {"shape": (4096,), "low": -20, "high": 20, "approximate": "tanh"}),
        Case("outlier_none", OUTLIER, {"shape": (4096,), "low": -128, "high": 128}),
        Case("outlier_tanh", OUTLIER, {"shape": (4096,), "low": -128, "high": 128, "approximate": "tanh"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "low": -10, "high": 10}) for e in (26, 27, 28, 29)],
    flops=_flops,
    bytes=_bytes,
)
