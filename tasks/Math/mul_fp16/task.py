"""Math/mul_fp16: elementwise product of two float16 tensors with broadcasting, float16 result.

Upstream ships this dtype variant without metadata (its evaluator cannot resolve it); kbx models it on
Math/mul with float16 operands.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.mul(input, other)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float16", device)
        y = literal(params["other"], "float16", device)
    else:
        x = rand_tensor(params["shape"], "float16", params["mode"], gen, device)
        y = rand_tensor(params["shape"], "float16", params["mode"], gen, device)
    return Call((x, y))


def _n_out(input, other):
    return torch.broadcast_shapes(input.shape, other.shape).numel()


def _flops(input, other):
    return float(_n_out(input, other))


def _bytes(input, other):
    return float((input.numel() + other.numel() + _n_out(input, other)) * input.element_size())


_OTHER = [[0.5, 1.5], [2.5, 3.5]]

TASK = Task(
    entry="mul_fp16",
    dtypes=("float16",),
    signature="mul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor",
    description=(
        "Return input * other elementwise for two float16 tensors whose shapes broadcast against each other, "
        "as a new float16 tensor of the broadcast shape. The product must be rounded once to float16 (as if "
        "computed in fp32)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed", FIXED, {"values": [[1.0, 2.0], [3.0, 4.0]], "other": _OTHER}),
        Case("fixed_negative", FIXED, {"values": [[-1.0, 0.0], [2.0, -3.0]], "other": [[4.0, -5.0], [-6.0, 7.0]]}),
        Case("fixed_zeros", FIXED, {"values": [[0.0, 0.0], [0.0, 0.0]], "other": _OTHER}),
        Case("fixed_broadcast", FIXED, {"values": [[1.0, 2.0, 3.0]], "other": [10.0, 0.0, -10.0]}),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
    ],
    perf=[
        Case(f"{m}x{n}", PERF, {"shape": (m, n), "mode": "uniform"})
        for m, n in ((8192, 8192), (8192, 16384), (16384, 16384))
    ],
    flops=_flops,
    bytes=_bytes,
    notes="dtype variant without upstream metadata; modelled on Math/mul.",
)
