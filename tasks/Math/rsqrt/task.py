"""Math/rsqrt: 1 / sqrt(x) elementwise in fp32, optionally into `out`.

Upstream stored nan_to_num of the [-1, 4, 9] output plus a NaN mask; kbx compares NaN positions directly.
kbx adds an `out=` case judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.rsqrt(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "abs_plus" in params:
        x = x.abs() + params["abs_plus"]
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 2.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="rsqrt",
    dtypes=("float32",),
    signature="rsqrt(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return 1 / sqrt(x) elementwise as a new fp32 tensor of the input's shape (rsqrt(0) = +inf, negative x "
        "gives NaN). If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_squares", FIXED, {"values": [4.0, 16.0, 25.0]}),
        Case("fixed_zero", FIXED, {"values": [0.0, 1.0, 4.0]}),
        Case("fixed_negative", FIXED, {"values": [-1.0, 4.0, 9.0]}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0]}),
        Case("fixed_out", FIXED, {"values": [-1.0, 0.0, 4.0, 9.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "abs_plus": 1e-3}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "abs_plus": 1e-3}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "abs_plus": 1e-6}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
