"""Math/signbit_bitwise_and: the pair (signbit(input), int8(input) & int8(other)) for an fp32 input."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_bool, rand_int, rand_tensor


def reference(input: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.signbit(input), torch.bitwise_and(input.to(torch.int8), other.to(torch.int8))


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        y = literal(params["other"], params["other_dtype"], device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if params["other_dtype"] == "bool":
            y = rand_bool(params["shape"], gen, device)
        else:
            y = rand_int(params["shape"], 0, 2, gen, device, dtype="int8")
    return Call((x, y))


def _flops(input, other):
    return 2.0 * input.numel()


def _bytes(input, other):
    n = input.numel()
    return float(n * input.element_size() + other.numel() * other.element_size() + 2 * n)


TASK = Task(
    entry="signbit_bitwise_and",
    dtypes=("float32", "int8", "bool"),
    signature="signbit_bitwise_and(input: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]",
    description=(
        "For an fp32 `input` and an int8 or bool `other` of the same shape, return a tuple of two new tensors: "
        "signbit(input) as bool (True for negatives and -0.0), and the bitwise AND of input converted to int8 "
        "(truncation toward zero, e.g. -1.2 -> -1, whose bits are 0xFF) with other converted to int8 (True -> 1), "
        "as int8. Inputs here stay within the int8 range."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mixed", FIXED, {"values": [0.7, -1.2, 0.0, 2.3], "other": [1, 0, 1, 1], "other_dtype": "int8"}),
        Case("fixed_negative", FIXED, {"values": [-0.7, -1.2, -0.1, -2.3], "other": [1, 1, 1, 1],
                                       "other_dtype": "int8"}),
        Case("fixed_bool_other", FIXED, {"values": [0.0, 1.2, 0.0, 2.3], "other": [True, False, True, True],
                                         "other_dtype": "bool"}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0, 0.0], "other": [1, 0, 1, 1], "other_dtype": "int8"}),
        Case("standard_int8", STANDARD, {"shape": (1024,), "mode": "standard", "other_dtype": "int8"}),
        Case("standard_bool", STANDARD, {"shape": (1024,), "mode": "standard", "other_dtype": "bool"}),
        Case("outlier_int8", OUTLIER, {"shape": (1024,), "mode": "outlier", "other_dtype": "int8"}),
        Case("outlier_bool", OUTLIER, {"shape": (1024,), "mode": "outlier", "other_dtype": "bool"}),
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "other_dtype": "int8"}) for e in (25, 26, 27, 28)
    ],
    flops=_flops,
    bytes=_bytes,
)
