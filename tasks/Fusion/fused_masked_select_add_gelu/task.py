"""Fusion/fused_masked_select_add_gelu: GELU(masked_select(input, mask) + alpha * other), a 1-D result.

kbx judges `out` after the call in the cases that pass it.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_bool, rand_tensor


def reference(input, mask, other, *, alpha=1, approximate="none", out=None):
    z = torch.masked_select(input, mask)
    result = torch.nn.functional.gelu(z + alpha * other, approximate=approximate)
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        mask = literal(params["mask"], "bool", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        mask = rand_bool(params["shape"], gen, device)
    kwargs = {k: params[k] for k in ("alpha", "approximate") if k in params}
    if params.get("out"):
        kwargs["out"] = torch.zeros(int(mask.sum()), dtype=x.dtype, device=device)
    return Call((x, mask, params["other"]), kwargs)


def _flops(input, mask, other, *, alpha=1, approximate="none", out=None):
    return 9.0 * float(mask.sum())


def _bytes(input, mask, other, *, alpha=1, approximate="none", out=None):
    return float(input.numel() * (input.element_size() + 1) + int(mask.sum()) * input.element_size())


_X = [1.0, 2.0, 3.0, 4.0]

TASK = Task(
    entry="fused_masked_select_add_gelu",
    dtypes=("float32", "bool"),
    signature=(
        "fused_masked_select_add_gelu(input: torch.Tensor, mask: torch.Tensor, other: torch.Tensor | float, *, "
        "alpha: float = 1, approximate: str = 'none', out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Select the elements of fp32 `input` where the same-shape bool `mask` is True, in row-major order, as a "
        "1-D tensor z; compute s = z + alpha * other (other a Python number or a tensor broadcastable to z); return "
        "GELU(s) as a new 1-D fp32 tensor: approximate='none' gives s * 0.5 * (1 + erf(s / sqrt(2))), 'tanh' gives "
        "0.5 * s * (1 + tanh(sqrt(2/pi) * (s + 0.044715 * s^3))). If `out` (of the selected length) is given, "
        "write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mask1", FIXED, {"values": _X, "mask": [True, False, True, False], "other": 1.0}),
        Case("fixed_alpha", FIXED, {"values": _X, "mask": [True, True, False, False], "other": 2.0, "alpha": 0.5}),
        Case("fixed_tanh", FIXED, {"values": _X, "mask": [False, True, True, False], "other": 1.0,
                                   "approximate": "tanh"}),  # fmt: skip
        Case("fixed_out", FIXED, {"values": _X, "mask": [True, False, True, True], "other": 1.0, "out": True}),
        Case("standard_tanh", STANDARD, {"shape": (4096,), "mode": "standard", "other": 0.1, "alpha": 0.5,
                                         "approximate": "tanh"}),  # fmt: skip
        Case("standard_2d_none_out", STANDARD, {"shape": (64, 64), "mode": "standard", "other": 0.1, "alpha": 0.5,
                                                "out": True}),  # fmt: skip
        Case("outlier_tanh", OUTLIER, {"shape": (4096,), "mode": "outlier", "other": 0.1, "alpha": 0.5,
                                       "approximate": "tanh"}),  # fmt: skip
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "other": 0.5}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="`out` judged after the call.",
)
