"""Fusion/fused_exp_mean: mean of exp(input) over all elements or one dim, optional keepdim (fp32).

kbx departure: perf sizes are 2^24..2^27 elements (upstream went to 2^29, 2 GB inputs).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, dim=None, keepdim=False, dtype=None, out=None) -> torch.Tensor:
    return torch.mean(torch.exp(input), dim=dim, keepdim=keepdim, dtype=dtype)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("dim", "keepdim") if k in params}
    return Call((x,), kwargs)


def _flops(input, dim=None, keepdim=False, dtype=None, out=None):
    return 2.0 * input.numel()


def _bytes(input, dim=None, keepdim=False, dtype=None, out=None):
    n_out = 1 if dim is None else input.numel() // input.shape[dim]
    return float((input.numel() + n_out) * input.element_size())


_SQ = [[1.0, 2.0], [3.0, 4.0]]
_CUBE = [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]

TASK = Task(
    entry="fused_exp_mean",
    dtypes=("float32",),
    signature=(
        "fused_exp_mean(input: torch.Tensor, dim: int | None = None, keepdim: bool = False, "
        "dtype: torch.dtype | None = None, out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return the mean of exp(input) for an fp32 tensor: over all elements when dim is None (a 0-d tensor, or "
        "an all-ones shape with keepdim=True), otherwise over dimension `dim`, kept with size 1 when keepdim=True. "
        "The result is fp32 (dtype, if given, is the accumulation/output dtype); `out` is ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_global", FIXED, {"values": [1.0, 2.0, 3.0]}),
        Case("fixed_dim0", FIXED, {"values": _SQ, "dim": 0}),
        Case("fixed_dim1_keepdim", FIXED, {"values": _SQ, "dim": 1, "keepdim": True}),
        Case("fixed_3d_global", FIXED, {"values": _CUBE}),
        *[
            Case(f"{mode}_dim{d}", STANDARD if mode == "standard" else OUTLIER,
                 {"shape": (256, 512), "mode": mode, "dim": d, "keepdim": True})  # fmt: skip
            for mode in ("standard", "outlier")
            for d in (None, 0, 1)
        ],
        Case("standard_3d_dim1", STANDARD, {"shape": (6, 100, 37), "mode": "standard", "dim": 1}),
        Case("standard_3d_dim_neg1", STANDARD, {"shape": (6, 10, 300), "mode": "standard", "dim": -1}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="perf sizes capped at 2^27.",
)
