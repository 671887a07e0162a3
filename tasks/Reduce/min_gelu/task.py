"""Reduce/min_gelu: minimum of a GELU-like transform, globally or along a dim (with indices).

Upstream quirk kept on purpose: for approximate='none' the transform is x * erf(x / sqrt(2)) / 2,
i.e. GELU without its "1 +" term (an even function, never negative); 'tanh' is the true tanh GELU.
kbx adds a case for the ValueError raised on any other `approximate`.
"""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, dim=None, keepdim: bool = False, approximate: str = "none"):
    if approximate == "none":
        g = input * torch.erf(input / math.sqrt(2.0)) / 2.0
    elif approximate == "tanh":
        k = torch.sqrt(torch.tensor(2.0 / math.pi, dtype=input.dtype, device=input.device))
        g = 0.5 * input * (1.0 + torch.tanh(k * (input + 0.044715 * input.pow(3))))
    else:
        raise ValueError(f"Invalid value for approximate: {approximate}. Choose 'none' or 'tanh'.")
    if dim is None:
        return torch.min(g)
    values, indices = torch.min(g, dim=dim, keepdim=keepdim)
    return values, indices


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("dim", "keepdim", "approximate") if k in params}
    return Call((x,), kwargs)


def _flops(input, dim=None, keepdim=False, approximate="none"):
    return (12.0 if approximate == "tanh" else 9.0) * input.numel()


def _bytes(input, dim=None, keepdim=False, approximate="none"):
    if dim is None:
        n_out, idx = 1, 0
    else:
        n_out, idx = input.numel() // max(input.shape[dim], 1), 8
    return float(input.numel() * input.element_size() + n_out * (input.element_size() + idx))


_V = [1.0, -0.5, 0.0, 2.0]
_M = [[1.0, -0.5], [0.0, 2.0]]


def _random(mode):
    kind = STANDARD if mode == "standard" else OUTLIER
    return [
        Case(f"{mode}_1d_global", kind, {"shape": (4096,), "mode": mode}),
        Case(f"{mode}_2d_dim1", kind, {"shape": (128, 256), "mode": mode, "dim": 1}),
        Case(f"{mode}_2d_dim1_keepdim", kind, {"shape": (128, 256), "mode": mode, "dim": 1, "keepdim": True}),
        Case(f"{mode}_1d_global_tanh", kind, {"shape": (4096,), "mode": mode, "approximate": "tanh"}),
    ]


TASK = Task(
    entry="min_gelu",
    dtypes=("float32", "int64"),
    signature=(
        "min_gelu(input: torch.Tensor, dim: int | None = None, keepdim: bool = False, "
        "approximate: str = 'none') -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "Transform fp32 `input` elementwise, then take the minimum. approximate='none': g = x * erf(x / sqrt(2)) / 2 "
        "(note: no '1 +' term); approximate='tanh': g = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))); "
        "any other value raises ValueError. With dim=None return the global minimum of g as a 0-d fp32 tensor; "
        "otherwise return (values, int64 indices) of torch.min(g, dim, keepdim) (first index on ties)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_global", FIXED, {"values": _V}),
        Case("fixed_dim1", FIXED, {"values": _M, "dim": 1}),
        Case("fixed_dim1_keepdim", FIXED, {"values": _M, "dim": 1, "keepdim": True}),
        Case("fixed_global_tanh", FIXED, {"values": _V, "approximate": "tanh"}),
        Case("fixed_invalid_approximate", FIXED, {"values": _V, "approximate": "sigmoid"}),
        *_random("standard"),
        *_random("outlier"),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "dim": 0}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="keeps upstream's 'none' transform without the '1 +' term; adds an invalid-approximate (ValueError) case.",
)
