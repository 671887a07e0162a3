"""Math/bitwise_and: elementwise AND of integer (bitwise) or bool (logical) tensors, with broadcasting.

kbx adds an `out=` case (judged after the call) and a full-range int32 case with negative values.
"""

import torch

from kbx.tasks import FIXED, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_bool, rand_int


def reference(input, other, out=None):
    return torch.bitwise_and(input, other, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        dtype = params["dtype"]
        x = literal(params["values"], dtype, device)
        y = literal(params["other"], dtype, device)
    elif params["dtype"] == "bool":
        x = rand_bool(params["shape"], gen, device)
        y = rand_bool(params["shape"], gen, device)
    else:
        lo, hi = params["range"]
        x = rand_int(params["shape"], lo, hi, gen, device, dtype=params["dtype"])
        y = rand_int(params["shape"], lo, hi, gen, device, dtype=params["dtype"])
    kwargs = {"out": torch.zeros(torch.broadcast_shapes(x.shape, y.shape), dtype=x.dtype, device=device)} \
        if params.get("out") else {}
    return Call((x, y), kwargs)


def _flops(input, other, out=None):
    return float(torch.broadcast_shapes(input.shape, other.shape).numel())


def _bytes(input, other, out=None):
    n_out = torch.broadcast_shapes(input.shape, other.shape).numel()
    return float((input.numel() + other.numel() + n_out) * input.element_size())


TASK = Task(
    entry="bitwise_and",
    dtypes=("int32", "bool"),
    signature="bitwise_and(input: torch.Tensor, other: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return input & other elementwise as torch.bitwise_and does: bitwise AND for integer tensors (two's "
        "complement, so negative values work), logical AND for bool tensors. Shapes broadcast (a 0-d tensor "
        "operand included) and the result keeps the inputs' dtype (int32 stays int32, bool stays bool). If `out` "
        "is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_int32", FIXED, {"values": [1, 2, 3], "other": [3, 2, 1], "dtype": "int32"}),
        Case("fixed_bool", FIXED, {"values": [True, False, True], "other": [False, False, True], "dtype": "bool"}),
        Case("fixed_broadcast", FIXED, {"values": [[1, 2], [3, 4]], "other": [1, 0], "dtype": "int32"}),
        Case("fixed_scalar_tensor", FIXED, {"values": [1, 2, 3], "other": 2, "dtype": "int32"}),
        Case("fixed_out", FIXED, {"values": [[1, 2], [3, 4]], "other": [1, 0], "dtype": "int32", "out": True}),
        Case("standard_int32", STANDARD, {"shape": (64, 64), "range": (0, 256), "dtype": "int32"}),
        Case("standard_int32_full", STANDARD, {"shape": (64, 64), "range": (-2**31, 2**31), "dtype": "int32"}),
        Case("standard_bool", STANDARD, {"shape": (1024,), "dtype": "bool"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "range": (0, 2), "dtype": "int32"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case and a full-range int32 case.",
)
