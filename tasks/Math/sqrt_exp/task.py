"""Math/sqrt_exp: exp(sqrt(x)) elementwise in fp32, optionally into `out`.

kbx judges `out` after the call in the cases that pass it (upstream compared only the return value).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    if out is None:
        return torch.exp(torch.sqrt(input))
    torch.sqrt(input, out=out)
    return out.exp_()


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device).abs().clamp(max=100.0)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 6.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="sqrt_exp",
    dtypes=("float32",),
    signature="sqrt_exp(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return exp(sqrt(x)) elementwise as a new fp32 tensor of the input's shape (negative x gives nan; an "
        "empty input gives an empty output). If `out` (same shape and dtype) is given, write the result into "
        "it and return `out`; `input` must not change."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_squares", FIXED, {"values": [0.25, 1.0, 4.0, 9.0]}),
        Case("fixed_empty", FIXED, {"values": []}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0]}),
        Case("fixed_out", FIXED, {"values": [0.25, 1.0, 4.0, 9.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("standard_out", STANDARD, {"shape": (64, 64), "mode": "standard", "out": True}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
        Case("outlier_out", OUTLIER, {"shape": (64, 64), "mode": "outlier", "out": True}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="`out` judged after the call.",
)
