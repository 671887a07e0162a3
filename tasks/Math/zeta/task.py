"""Math/zeta: the Hurwitz zeta function zeta(x, q) elementwise in fp32, optionally into `out`.

kbx departure: upstream's fixed case x = [-2, -3] (an all-NaN output) gains a pair x = 2, q = 1, since kbx
rejects references whose output is entirely NaN. kbx adds an `out=` case judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, out=None):
    return torch.special.zeta(input, other, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        q = literal(params["other"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        q = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if params["mode"] == "uniform":
            x, q = x + 2.0, q + 1.0
        else:
            x, q = x.abs() + 2.0, q.abs() + 1.0
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x, q), kwargs)


def _flops(input, other, out=None):
    return 10.0 * input.numel()


def _bytes(input, other, out=None):
    return 3.0 * input.numel() * input.element_size()


TASK = Task(
    entry="zeta",
    dtypes=("float32",),
    signature="zeta(input: torch.Tensor, other: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return the Hurwitz zeta function zeta(x, q) = sum over k >= 0 of (k + q)^(-x), with x = input and "
        "q = other (same shape), elementwise as a new fp32 tensor, as torch.special.zeta: x < 1 gives NaN and x = 1 "
        "gives +inf. If `out` is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [2.0, 3.0], "other": [1.0, 2.0]}),
        Case("fixed_large", FIXED, {"values": [10.0, 20.0], "other": [5.0, 10.0]}),
        Case("fixed_fractional", FIXED, {"values": [2.5, 3.5], "other": [1.5, 2.5]}),
        Case("fixed_below_one", FIXED, {"values": [-2.0, -3.0, 2.0], "other": [1.0, 2.0, 1.0]}),
        Case("fixed_out", FIXED, {"values": [2.0, 3.0, 1.0], "other": [1.0, 2.0, 1.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="all-NaN fixed case extended with a finite pair; adds an `out=` case.",
)
