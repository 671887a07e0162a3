"""Math/abs: elementwise absolute value of an fp32 tensor, optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.abs(input_tensor, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input_tensor, out=None):
    return 1.0 * input_tensor.numel()


def _bytes(input_tensor, out=None):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="abs",
    dtypes=("float32",),
    signature="abs(input_tensor: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return |x| elementwise as a new tensor of the input's shape and dtype (abs(-0.0) is 0.0). "
        "If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mixed", FIXED, {"values": [-1.0, 2.0, -3.0]}),
        Case("fixed_zeros", FIXED, {"values": [0.0, -0.0, 0.0]}),
        Case("fixed_symmetric", FIXED, {"values": [-5.0, 0.0, 5.0]}),
        Case("fixed_magnitudes", FIXED, {"values": [-1e10, 1e10, -1e-10]}),
        Case("fixed_out", FIXED, {"values": [-1.0, 2.0, -3.0], "out": True}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard"}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
