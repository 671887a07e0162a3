"""Fusion/fused_add_gelu: GELU(input + alpha * other), exact erf or tanh form; fp32 checks, fp16 perf.

An `approximate` value other than 'none' or 'tanh' must raise ValueError (a fixed case checks the
exception type only, never its message).
"""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, alpha=1, approximate="none", out=None):
    r = torch.add(input, other, alpha=alpha)
    if approximate == "none":
        return torch.nn.functional.gelu(r)
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * r * (1.0 + torch.tanh(c * (r + 0.044715 * r.pow(3))))
    raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


def make_inputs(params, gen, device) -> Call:
    dtype = params.get("dtype", "float32")
    if "values" in params:
        x = literal(params["values"], dtype, device)
        o = params["other"]
        other = literal(o, dtype, device) if isinstance(o, list) else o
    else:
        x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
        other = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("alpha", "approximate") if k in params}
    return Call((x, other), kwargs)


def _flops(input, other, alpha=1, approximate="none", out=None):
    return (14.0 if approximate == "tanh" else 6.0) * input.numel()


def _bytes(input, other, alpha=1, approximate="none", out=None):
    n_other = other.numel() if isinstance(other, torch.Tensor) else 0
    return float((2 * input.numel() + n_other) * input.element_size())


_X = [1.0, 2.0, 3.0]
_HALF = [0.5, 0.5, 0.5]

TASK = Task(
    entry="fused_add_gelu",
    dtypes=("float32", "float16"),
    signature=(
        "fused_add_gelu(input: torch.Tensor, other: torch.Tensor | float, alpha: float = 1, "
        "approximate: str = 'none', out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Compute r = input + alpha * other (other is a same-shape tensor or a Python number; r has input's dtype) "
        "and return GELU(r) as a new tensor: with approximate='none' the exact r * 0.5 * (1 + erf(r / sqrt(2))), "
        "with approximate='tanh' 0.5 * r * (1 + tanh(sqrt(2/pi) * (r + 0.044715 * r^3))). Any other value of "
        "`approximate` raises ValueError. `out` is accepted and ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_tensors", FIXED, {"values": _X, "other": _HALF}),
        Case("fixed_alpha", FIXED, {"values": _X, "other": _HALF, "alpha": 2.0}),
        Case("fixed_tanh", FIXED, {"values": _X, "other": _HALF, "approximate": "tanh"}),
        Case("fixed_scalar_other", FIXED, {"values": _X, "other": 0.5}),
        Case("fixed_invalid_approximate", FIXED, {"values": _X, "other": _HALF, "approximate": "fast"}),
        Case("standard_tanh", STANDARD, {"shape": (512, 512), "mode": "standard", "alpha": 0.5, "approximate": "tanh"}),
        Case("outlier_tanh", OUTLIER, {"shape": (512, 512), "mode": "outlier", "alpha": 0.5, "approximate": "tanh"}),
        Case("standard_none", STANDARD, {"shape": (512, 512), "mode": "standard", "alpha": 0.5}),
    ],
    perf=[
        Case(f"n2^{e}_fp16", PERF, {"shape": (2**e,), "mode": "uniform", "dtype": "float16"}) for e in (24, 25, 26, 27)
    ],
    flops=_flops,
    bytes=_bytes,
)
