"""Math/div: input / other with torch.div semantics (true division, or 'trunc' / 'floor' rounding) in fp32.

kbx adds cases for the 'trunc' and 'floor' rounding modes (upstream supported but never tested them) and an
`out=` case judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, rounding_mode=None, out=None):
    return torch.div(input, other, rounding_mode=rounding_mode, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        o = params["other"]
        y = literal(o, "float32", device) if isinstance(o, list) or params.get("tensor_other") else o
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        y = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if params["mode"] == "uniform":
            y = y + 1e-6
        else:
            y = y + 1e-3  # as upstream: denominators may come close to zero, giving huge quotients
    kwargs = {}
    if "rounding_mode" in params:
        kwargs["rounding_mode"] = params["rounding_mode"]
    if params.get("out"):
        kwargs["out"] = torch.zeros(torch.broadcast_shapes(x.shape, getattr(y, "shape", ())), device=device)
    return Call((x, y), kwargs)


def _n_out(input, other):
    return torch.broadcast_shapes(input.shape, getattr(other, "shape", ())).numel()


def _flops(input, other, rounding_mode=None, out=None):
    return float(_n_out(input, other))


def _bytes(input, other, rounding_mode=None, out=None):
    n_other = other.numel() if isinstance(other, torch.Tensor) else 0
    return float((input.numel() + n_other + _n_out(input, other)) * input.element_size())


TASK = Task(
    entry="div",
    dtypes=("float32",),
    signature=(
        "div(input: torch.Tensor, other: torch.Tensor | float, rounding_mode: str | None = None, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return input / other elementwise as torch.div does: `other` is a tensor (broadcast against `input`, "
        "0-d tensors included) or a Python number, and the result is fp32. rounding_mode=None is true division "
        "(x / 0 gives +-inf or NaN), 'trunc' rounds the quotient toward zero, 'floor' rounds it down "
        "(Python // semantics). If `out` is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_0d", FIXED, {"values": 6.0, "other": 3.0, "tensor_other": True}),
        Case("fixed_vectors", FIXED, {"values": [6.0, 9.0], "other": [3.0, 3.0]}),
        Case("fixed_scalar", FIXED, {"values": [6.0, 9.0], "other": 3.0}),
        Case("fixed_broadcast", FIXED, {"values": [[6.0, 9.0], [12.0, 15.0]], "other": [3.0, 3.0]}),
        Case("fixed_trunc", FIXED, {"values": [7.0, -7.0, 7.5, -0.5], "other": [2.0, 2.0, -2.0, 3.0],
                                    "rounding_mode": "trunc"}),
        Case("fixed_floor", FIXED, {"values": [7.0, -7.0, 7.5, -0.5], "other": [2.0, 2.0, -2.0, 3.0],
                                    "rounding_mode": "floor"}),
        Case("fixed_out", FIXED, {"values": [[6.0, 9.0], [12.0, 15.0]], "other": [3.0, 0.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("standard_floor", STANDARD, {"shape": (64, 64), "mode": "standard", "rounding_mode": "floor"}),
        Case("standard_trunc", STANDARD, {"shape": (64, 64), "mode": "standard", "rounding_mode": "trunc"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds 'trunc' / 'floor' rounding-mode cases and an `out=` case.",
)
