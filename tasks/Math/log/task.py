"""Math/log: natural logarithm elementwise in fp32, optionally into `out` (the perf calls pass `out`).

kbx departure: upstream's all-negative fixed case [-1, -2, -3] (an all-NaN output) gains a 1.0, since kbx
rejects references whose output is entirely NaN. kbx adds an `out=` correctness case.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.log(input, out=out)


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
    return 20.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="log",
    dtypes=("float32",),
    signature="log(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return ln(x) elementwise as a new fp32 tensor of the input's shape (log(0) = -inf, log of a negative "
        "number = NaN). If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_positive", FIXED, {"values": [1.0, 2.0, 3.0]}),
        Case("fixed_zero", FIXED, {"values": [0.0, 1.0, 2.0]}),
        Case("fixed_negative", FIXED, {"values": [-1.0, -2.0, -3.0, 1.0]}),
        Case("fixed_mixed", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_out", FIXED, {"values": [-1.0, 0.0, 1.0, 2.0], "out": True}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard", "abs_plus": 1e-3}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "abs_plus": 1e-3}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "abs_plus": 1e-3}),
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "abs_plus": 1e-6, "out": True})
        for e in (24, 25, 26, 27)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="all-NaN fixed case extended with 1.0; adds an `out=` case judged after the call.",
)
