"""Fusion/fused_log_tanh: tanh(log(x)) elementwise for strictly positive fp32 input, optionally into `out`.

A non-positive element must raise ValueError; kbx compares the exception type only (upstream
compared the message string). kbx judges `out` after the call in the case that passes it.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, out=None):
    if bool((input <= 0).any()):
        raise ValueError("All input elements must be positive for the logarithm function to be defined.")
    result = torch.tanh(torch.log(input))
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        # positive inputs: |x| + 0.1 for randn draws (upstream), rand + 1e-6 for perf
        x = x + 1e-6 if params["mode"] == "uniform" else x.abs() + 0.1
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 2.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="fused_log_tanh",
    dtypes=("float32",),
    signature="fused_log_tanh(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return tanh(log(input)) elementwise as a new fp32 tensor of input's shape. If any element of `input` is "
        "<= 0, raise ValueError instead (before computing anything). If `out` (same shape) is given, write the "
        "result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_123", FIXED, {"values": [1.0, 2.0, 3.0]}),
        Case("fixed_123_out", FIXED, {"values": [1.0, 2.0, 3.0], "out": True}),
        Case("fixed_small", FIXED, {"values": [0.1, 0.01, 0.001]}),
        Case("fixed_nonpositive", FIXED, {"values": [-1.0, 0.0, 2.0]}),
        Case("standard", STANDARD, {"shape": (4096,), "mode": "standard"}),
        Case("standard_out", STANDARD, {"shape": (4096,), "mode": "standard", "out": True}),
        Case("outlier", OUTLIER, {"shape": (4096,), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="non-positive input compared by exception type (ValueError), not message; `out` judged after the call.",
)
