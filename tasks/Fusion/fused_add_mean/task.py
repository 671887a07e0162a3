"""Fusion/fused_add_mean: mean of input + alpha * other, over all elements or one dim, optional keepdim."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None) -> torch.Tensor:
    if not isinstance(other, torch.Tensor):
        other = torch.tensor(other, dtype=input.dtype, device=input.device)
    r = torch.add(input, other, alpha=alpha)
    return torch.mean(r, dim=dim, keepdim=keepdim, dtype=dtype)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
        o = params["other"]
        other = literal(o, "float32", device) if isinstance(o, list) else o
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        other = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("dim", "alpha", "keepdim") if k in params}
    return Call((x, other), kwargs)


def _flops(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None):
    return 3.0 * input.numel()


def _bytes(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None):
    n_other = other.numel() if isinstance(other, torch.Tensor) else 0
    return float((input.numel() + n_other) * input.element_size())


_SQ = [[1.0, 2.0], [3.0, 4.0]]
_HALF = [[0.5, 0.5], [0.5, 0.5]]

TASK = Task(
    entry="fused_add_mean",
    dtypes=("float32",),
    signature=(
        "fused_add_mean(input: torch.Tensor, other: torch.Tensor | float, dim: int | None = None, "
        "alpha: float = 1, keepdim: bool = False, dtype: torch.dtype | None = None, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Compute r = input + alpha * other (other is a tensor of the same shape or a Python number) and return "
        "the mean of r: over all elements when dim is None (a 0-d tensor, or all-ones shape such as (1, 1) with "
        "keepdim=True), otherwise over dimension `dim`, keeping it with size 1 when keepdim=True. "
        "The result is fp32 (dtype, if given, is the accumulation/output dtype); `out` is ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_global", FIXED, {"values": [1.0, 2.0, 3.0], "other": [0.5, 0.5, 0.5]}),
        Case("fixed_scalar_alpha", FIXED, {"values": [1.0, 2.0, 3.0], "other": 0.5, "alpha": 2}),
        Case("fixed_dim0", FIXED, {"values": _SQ, "other": _HALF, "dim": 0}),
        Case("fixed_dim1_keepdim", FIXED, {"values": _SQ, "other": _HALF, "dim": 1, "keepdim": True}),
        *[
            Case(
                f"{mode}_dim{d}",
                STANDARD if mode == "standard" else OUTLIER,
                {"shape": (128, 256), "mode": mode, "dim": d, "alpha": 0.5, "keepdim": True},
            )
            for mode in ("standard", "outlier")
            for d in (None, 0, 1)
        ],
        Case("standard_dim1_nokeep", STANDARD, {"shape": (96, 300), "mode": "standard", "dim": 1, "alpha": -1.5}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
