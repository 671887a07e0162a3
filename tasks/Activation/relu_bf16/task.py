"""Activation/relu_bf16: ReLU (max(x, 0)) on a bfloat16 tensor, bfloat16 result.

Upstream ships this dtype variant without metadata (its evaluator cannot resolve it); kbx models it on
Activation/relu with bfloat16 inputs and outputs.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor) -> torch.Tensor:
    return torch.relu(input)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "bfloat16", device)
    else:
        x = rand_tensor(params["shape"], "bfloat16", params["mode"], gen, device)
    return Call((x,))


def _flops(input):
    return 1.0 * input.numel()


def _bytes(input):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="relu_bf16",
    dtypes=("bfloat16",),
    signature="relu_bf16(input: torch.Tensor) -> torch.Tensor",
    description=(
        "Return max(x, 0) elementwise for a bfloat16 tensor as a new bfloat16 tensor of the same shape; "
        "`input` must not change (the sign of a zero result is not judged)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
        Case("fixed_2d", FIXED, {"values": [[-3.0, -0.0, 0.0, 1.0], [2.0, -2.0, 3.0, -4.0]]}),
        Case("fixed_extreme", FIXED, {"values": [-1e4, -100.0, -1.0, 0.0, 1.0, 100.0, 1e4]}),
        Case("fixed_zeros", FIXED, {"values": [[0.0] * 4] * 4}),
        Case("fixed_pattern", FIXED, {"values": [-1.0, 1.0, -1.0, 1.0, 0.0, 0.0]}),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (25, 26, 27, 28)],
    flops=_flops,
    bytes=_bytes,
    notes="dtype variant without upstream metadata; modelled on Activation/relu.",
)
