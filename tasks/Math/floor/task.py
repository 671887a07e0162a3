"""Math/floor: elementwise floor of an fp32 tensor (an int64 input returns equal int64 values), optionally into `out`.

kbx adds a case passing `out`, judged after the call. Upstream's fixed rand(1000) * 100 - 50 case is seeded here.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.floor(input, out=out)


def make_inputs(params, gen, device) -> Call:
    dtype = params.get("dtype", "float32")
    if "values" in params:
        x = literal(params["values"], dtype, device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if "scale" in params:
            x = x * params["scale"] - params["scale"] / 2
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return float(input.numel())


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="floor",
    dtypes=("float32", "int64"),
    signature="floor(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return floor(x) (largest integer <= x) elementwise as a new tensor with the input's shape and dtype: "
        "an fp32 input gives fp32 (floor of -0.0 stays -0.0, inf and nan pass through), an int64 input gives an "
        "equal int64 tensor. If `out` (same shape and dtype) is given, write into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mixed", FIXED, {"values": [1.7, -2.3, 3.5, -4.8]}),
        Case("fixed_int64", FIXED, {"values": [1, -2, 3, -4], "dtype": "int64"}),
        Case("fixed_edges", FIXED, {"values": [0.0, 2.9, -3.1, 4.0]}),
        Case("fixed_out", FIXED, {"values": [1.7, -2.3, 3.5, -4.8], "out": True}),
        Case("standard_wide", STANDARD, {"shape": (1000,), "mode": "uniform", "scale": 100.0}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call; fixed rand case is seeded.",
)
