"""Fusion/fused_tile_exp: exp(input) replicated along new leading dimensions: shape dims + input.shape.

Despite the name this is not torch.tile: every slice out[i, j, ...] equals exp(input). kbx judges
`out` after the call in the cases that pass it.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, numel, rand_tensor


def reference(input, dims, *, out=None):
    result = torch.exp(input.unsqueeze(0).expand(*dims, *input.shape))
    if out is not None:
        out.copy_(result)
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    dims = tuple(params["dims"])
    kwargs = {"out": torch.zeros(*dims, *x.shape, dtype=x.dtype, device=device)} if params.get("out") else {}
    return Call((x, dims), kwargs)


def _flops(input, dims, *, out=None):
    return float(numel(dims) * input.numel())


def _bytes(input, dims, *, out=None):
    return float((1 + numel(dims)) * input.numel() * input.element_size())


_V = [1.0, 2.0, 3.0]

TASK = Task(
    entry="fused_tile_exp",
    dtypes=("float32",),
    signature=(
        "fused_tile_exp(input: torch.Tensor, dims: tuple[int, ...], *, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return a new fp32 tensor of shape tuple(dims) + input.shape in which every slice over the leading "
        "len(dims) indices equals exp(input) (exp(input) broadcast along new leading dimensions; not torch.tile). "
        "If `out` (of that shape) is given, also copy the result into it; the return value is the result tensor."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_1d", FIXED, {"values": _V, "dims": (2,)}),
        Case("fixed_2d_dims23", FIXED, {"values": [[1.0, 2.0], [3.0, 4.0]], "dims": (2, 3)}),
        Case("fixed_1d_dims3", FIXED, {"values": _V, "dims": (3,)}),
        Case("fixed_out", FIXED, {"values": _V, "dims": (2,), "out": True}),
        Case("standard_1d", STANDARD, {"shape": (256,), "mode": "standard", "dims": (2,)}),
        Case("standard_2d", STANDARD, {"shape": (32, 32), "mode": "standard", "dims": (2,)}),
        Case("outlier_1d", OUTLIER, {"shape": (256,), "mode": "outlier", "dims": (2,)}),
        Case("outlier_2d_out", OUTLIER, {"shape": (32, 32), "mode": "outlier", "dims": (2, 2), "out": True}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "dims": (2,)}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="`out` judged after the call.",
)
