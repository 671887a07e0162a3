"""Activation/tanh_bf16: the hyperbolic tangent on a bfloat16 tensor, bfloat16 result.

Upstream ships this dtype variant without metadata (its evaluator cannot resolve it); kbx models it on
Activation/tanh with bfloat16 inputs and outputs.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor) -> torch.Tensor:
    return torch.tanh(input)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "bfloat16", device)
    else:
        x = rand_tensor(params["shape"], "bfloat16", params["mode"], gen, device)
    return Call((x,))


def _flops(input):
    return 5.0 * input.numel()


def _bytes(input):
    return 2.0 * input.numel() * input.element_size()


_LINSPACE = [-12.0 + 24.0 * i / 256 for i in range(257)]  # linspace(-12, 12, 257), rounded to bf16


TASK = Task(
    entry="tanh_bf16",
    dtypes=("bfloat16",),
    signature="tanh_bf16(input: torch.Tensor) -> torch.Tensor",
    description=(
        "Return tanh(x) elementwise for a bfloat16 tensor as a new bfloat16 tensor of the same shape. "
        "Evaluate in at least fp32 precision and round once to bfloat16 at the end."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
        Case("fixed_extreme", FIXED, {"values": [-20.0, -10.0, -3.0, -1.0, 0.0, 1.0, 3.0, 10.0, 20.0]}),
        Case("fixed_2d", FIXED, {"values": [[-6.0, -2.0, 0.0], [2.0, 6.0, 12.0]]}),
        Case("fixed_linspace", FIXED, {"values": _LINSPACE}),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (25, 26, 27, 28)],
    flops=_flops,
    bytes=_bytes,
    notes="dtype variant without upstream metadata; modelled on Activation/tanh.",
)
