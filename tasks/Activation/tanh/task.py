"""Activation/tanh: hyperbolic tangent elementwise in fp32, optionally into `out_tensor`.

kbx adds a case that passes `out_tensor` (upstream never exercised it); it is judged after the call.
Upstream's fixed randn(100, 100) case is a seeded standard case here.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor, out_tensor: torch.Tensor | None = None) -> torch.Tensor:
    return torch.tanh(input_tensor, out=out_tensor)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"out_tensor": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input_tensor, out_tensor=None):
    return float(input_tensor.numel())


def _bytes(input_tensor, out_tensor=None):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="tanh",
    dtypes=("float32",),
    signature="tanh(input_tensor: torch.Tensor, out_tensor: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return tanh(x) elementwise as a new tensor of the input's shape and dtype (an empty input gives an "
        "empty output). If `out_tensor` (same shape and dtype) is given, write the result into it and return "
        "it; `input_tensor` itself must not change."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [0.0, 1.0, -1.0, 0.5, -0.5]}),
        Case("fixed_2d", FIXED, {"values": [[0.0, 1.0], [-1.0, 0.5]]}),
        Case("fixed_empty", FIXED, {"values": []}),
        Case("fixed_out", FIXED, {"values": [0.0, 1.0, -1.0, 0.5, -0.5], "out": True}, extra=True),
        Case("standard_100x100", STANDARD, {"shape": (100, 100), "mode": "standard"}),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out_tensor=` case, judged after the call; the fixed randn case is seeded.",
)
