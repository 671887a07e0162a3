"""Math/log1p: ln(1 + x) elementwise in fp32, optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.log1p(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "clamp" in params:
        x = x.clamp(*params["clamp"])
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 1.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="log1p",
    dtypes=("float32",),
    signature="log1p(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return ln(1 + x) elementwise as a new fp32 tensor of the input's shape, accurate for tiny |x| "
        "(inputs here are > -1). If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [0.1, 0.2, 0.3]}),
        Case("fixed_unit", FIXED, {"values": [0.0, 0.5, 1.0]}),
        Case("fixed_negative", FIXED, {"values": [-0.1, -0.2, -0.3]}),
        Case("fixed_integers", FIXED, {"values": [1.0, 2.0, 3.0, 4.0, 5.0]}),
        Case("fixed_out", FIXED, {"values": [-0.1, 0.0, 1e-7, 3.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "clamp": (-0.9, 10.0)}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "clamp": (-0.9, 10.0)}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
