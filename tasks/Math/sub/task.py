"""Math/sub: input - alpha * other with torch.sub semantics (tensor or Python-number other), optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, *, alpha=1, out=None):
    return torch.sub(input, other, alpha=alpha, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        o = params["other"]
        other = literal(o, "float32", device) if isinstance(o, list) else o
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        other = rand_tensor(params.get("other_shape", params["shape"]), "float32", params["mode"], gen, device)
    kwargs = {"alpha": params["alpha"]} if "alpha" in params else {}
    if params.get("out"):
        kwargs["out"] = torch.zeros(torch.broadcast_shapes(x.shape, getattr(other, "shape", ())), device=device)
    return Call((x, other), kwargs)


def _n_out(input, other):
    return torch.broadcast_shapes(input.shape, getattr(other, "shape", ())).numel()


def _flops(input, other, *, alpha=1, out=None):
    return float(_n_out(input, other))


def _bytes(input, other, *, alpha=1, out=None):
    n_other = other.numel() if isinstance(other, torch.Tensor) else 0
    return float((input.numel() + n_other + _n_out(input, other)) * input.element_size())


TASK = Task(
    entry="sub",
    dtypes=("float32",),
    signature=(
        "sub(input: torch.Tensor, other: torch.Tensor | float, *, alpha: float = 1, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return input - alpha * other as a new fp32 tensor, following torch.sub: `other` is a tensor (broadcast "
        "against `input`) or a Python number. If `out` is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_tensors", FIXED, {"values": [1.0, 2.0, 3.0], "other": [0.5, 1.0, 1.5]}),
        Case("fixed_alpha", FIXED, {"values": [4.0, 5.0, 6.0], "other": [1.0, 1.0, 1.0], "alpha": 2}),
        Case("fixed_scalar", FIXED, {"values": [7.0, 8.0, 9.0], "other": 2.0}),
        Case("fixed_out", FIXED, {"values": [10.0, 11.0, 12.0], "other": [3.0, 3.0, 3.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "alpha": 1.0}),
        Case("standard_broadcast", STANDARD, {"shape": (64, 64), "other_shape": (64,), "mode": "standard",
                                              "alpha": -1.5}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "alpha": 1.0}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "alpha": 1}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="`out` (upstream's fourth fixed case) is judged after the call; adds a broadcast case.",
)
