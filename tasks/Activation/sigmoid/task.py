"""Activation/sigmoid: the logistic function 1 / (1 + exp(-x)) elementwise in fp32, optionally into `out`.

kbx adds a case that passes `out` (upstream never exercised it); `out` is judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.sigmoid(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 4.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="sigmoid",
    dtypes=("float32",),
    signature="sigmoid(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return sigmoid(x) = 1 / (1 + exp(-x)) elementwise as a new tensor of the input's shape and dtype. "
        "If `out` (a tensor of the same shape and dtype) is given, write the result into it and return `out`; "
        "`input` itself must not change."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [0.0, 1.0, -1.0]}),
        Case("fixed_pairs", FIXED, {"values": [0.5, -0.5, 2.0, -2.0]}),
        Case("fixed_2d", FIXED, {"values": [[0.0, 1.0], [-1.0, 2.0]]}),
        Case("fixed_zeros", FIXED, {"values": [[0.0] * 3] * 3}),
        Case("fixed_out", FIXED, {"values": [0.5, -0.5, 2.0, -2.0], "out": True}, extra=True),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case; `out` and `input` are judged after the call.",
)
