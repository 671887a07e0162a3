"""Math/add: input + alpha * other with torch.add semantics (tensor or Python-scalar other)."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, alpha=1, out=None):
    return torch.add(input, other, alpha=alpha, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        o = params["other"]
        other = literal(o, "float32", device) if isinstance(o, list) else o
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        other = rand_tensor(params.get("other_shape", params["shape"]), "float32", params["mode"], gen, device)
    kwargs = {"alpha": params["alpha"]} if "alpha" in params else {}
    return Call((x, other), kwargs)


def _numel(t):
    return t.numel() if isinstance(t, torch.Tensor) else 0


def _flops(input, other, alpha=1, out=None):
    return float(torch.broadcast_shapes(input.shape, getattr(other, "shape", ())).numel())


def _bytes(input, other, alpha=1, out=None):
    n_out = torch.broadcast_shapes(input.shape, getattr(other, "shape", ())).numel()
    size = input.element_size()
    return float((input.numel() + _numel(other) + n_out) * size)


TASK = Task(
    entry="add",
    dtypes=("float32",),
    signature=(
        "add(input: torch.Tensor, other: torch.Tensor | float, alpha: float = 1, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return input + alpha * other as a new tensor, following torch.add: `other` is a tensor or a "
        "Python number, tensor shapes broadcast against each other, and the result has the promoted dtype "
        "(float32 for the inputs used here). If `out` is given, write the result into it and return it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_tensors", FIXED, {"values": [1.0, 2.0, 3.0], "other": [4.0, 5.0, 6.0]}),
        Case("fixed_scalar", FIXED, {"values": [1.0, 2.0, 3.0], "other": 2.0}),
        Case("fixed_tensors_alpha", FIXED, {"values": [1.0, 2.0, 3.0], "other": [4.0, 5.0, 6.0], "alpha": 0.5}),
        Case("fixed_scalar_alpha", FIXED, {"values": [1.0, 2.0, 3.0], "other": 2.0, "alpha": 0.5}),
        Case("standard", STANDARD, {"shape": (256, 256), "mode": "standard"}),
        Case(
            "standard_broadcast",
            STANDARD,
            {"shape": (256, 256), "other_shape": (256,), "mode": "standard", "alpha": -1.5},
        ),
        Case("outlier", OUTLIER, {"shape": (256, 256), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
