"""Fusion/fused_sub_gelu: GELU(input - alpha * other), exact (erf) or tanh form, optionally into `out`.

kbx departures: upstream's 'none' branch computed r * erf(r / sqrt(2)) * 0.5, dropping the "1 +" of
GELU; kbx's reference is the true exact GELU. An `approximate` other than 'none' or 'tanh' raises
ValueError (upstream silently fell back to its 'none' branch). kbx adds `out` cases, judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, alpha=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    result = torch.nn.functional.gelu(torch.sub(input, other, alpha=alpha), approximate=approximate)
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        o = params["other"]
        other = literal(o, "float32", device) if isinstance(o, list) else o
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        other = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("alpha", "approximate") if k in params}
    if params.get("out"):
        kwargs["out"] = torch.zeros_like(x)
    return Call((x, other), kwargs)


def _flops(input, other, alpha=1, approximate="none", out=None):
    return (11.0 if approximate == "tanh" else 6.0) * input.numel()


def _bytes(input, other, alpha=1, approximate="none", out=None):
    n_other = other.numel() if isinstance(other, torch.Tensor) else 0
    return float((2 * input.numel() + n_other) * input.element_size())


_X = [1.0, 2.0, 3.0]
_O = [0.5, 1.0, 1.5]

TASK = Task(
    entry="fused_sub_gelu",
    dtypes=("float32",),
    signature=(
        "fused_sub_gelu(input: torch.Tensor, other: torch.Tensor | float, alpha: float = 1, "
        "approximate: str = 'none', out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Compute r = input - alpha * other (other is a same-shape fp32 tensor or a Python number) and return "
        "GELU(r) as a new fp32 tensor: with approximate='none' the exact r * 0.5 * (1 + erf(r / sqrt(2))), with "
        "approximate='tanh' 0.5 * r * (1 + tanh(sqrt(2/pi) * (r + 0.044715 * r^3))); any other value raises "
        "ValueError. If `out` (same shape) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, {"values": _X, "other": _O}),
        Case("fixed_alpha", FIXED, {"values": _X, "other": _O, "alpha": 0.5}),
        Case("fixed_tanh", FIXED, {"values": _X, "other": _O, "approximate": "tanh"}),
        Case("fixed_alpha_tanh", FIXED, {"values": _X, "other": _O, "alpha": 0.5, "approximate": "tanh"}),
        Case("fixed_scalar_other_out", FIXED, {"values": _X, "other": 0.25, "out": True}),
        Case("fixed_invalid_approximate", FIXED, {"values": _X, "other": _O, "approximate": "fast"}),
        Case("standard_tanh", STANDARD, {"shape": (4096,), "mode": "standard", "alpha": 0.5, "approximate": "tanh"}),
        Case("standard_none_out", STANDARD, {"shape": (4096,), "mode": "standard", "alpha": 0.5, "out": True}),
        Case("outlier_tanh", OUTLIER, {"shape": (4096,), "mode": "outlier", "alpha": 0.5, "approximate": "tanh"}),
        Case("outlier_none", OUTLIER, {"shape": (4096,), "mode": "outlier", "alpha": 0.5}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes=(
        "'none' is the true exact GELU (upstream dropped the 1 +); invalid approximate raises ValueError; "
        "`out` judged after the call."
    ),
)
