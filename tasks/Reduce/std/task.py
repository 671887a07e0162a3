"""Reduce/std: standard deviation with Bessel-style correction, globally or over one dim."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, dim=None, correction=1, keepdim: bool = False) -> torch.Tensor:
    return torch.std(input, dim=dim, correction=correction, keepdim=keepdim)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("dim", "correction", "keepdim") if k in params}
    return Call((x,), kwargs)


def _flops(input, dim=None, correction=1, keepdim=False):
    return 3.0 * input.numel()


def _bytes(input, dim=None, correction=1, keepdim=False):
    n_out = 1 if dim is None else input.numel() // max(input.shape[dim], 1)
    return float((input.numel() + n_out) * input.element_size())


_V = [1.0, 2.0, 3.0, 4.0, 5.0]
_M = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _random(mode):
    kind = STANDARD if mode == "standard" else OUTLIER
    return [
        Case(f"{mode}_1d_global", kind, {"shape": (4096,), "mode": mode}),
        Case(f"{mode}_2d_dim0", kind, {"shape": (128, 256), "mode": mode, "dim": 0}),
        Case(f"{mode}_2d_dim1_keepdim", kind, {"shape": (128, 256), "mode": mode, "dim": 1, "keepdim": True}),
        Case(f"{mode}_2d_dim1_correction0", kind, {"shape": (128, 256), "mode": mode, "dim": 1, "correction": 0}),
    ]


TASK = Task(
    entry="std",
    dtypes=("float32",),
    signature=(
        "std(input: torch.Tensor, dim: int | None = None, correction: int = 1, keepdim: bool = False) -> torch.Tensor"
    ),
    description=(
        "Standard deviation of fp32 `input`, as torch.std: sqrt(sum((x - mean)^2) / (N - correction)) over all "
        "elements when dim is None (a 0-d result) or along dimension `dim` (keepdim=True keeps it with size 1), "
        "N being the number of reduced elements. Accumulate in fp32 with a numerically stable method (two passes "
        "or Welford), not E[x^2] - E[x]^2."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_global", FIXED, {"values": _V}),
        Case("fixed_dim0", FIXED, {"values": _M, "dim": 0}),
        Case("fixed_dim1_keepdim", FIXED, {"values": _M, "dim": 1, "keepdim": True}),
        Case("fixed_global_correction0", FIXED, {"values": _V, "correction": 0}),
        *_random("standard"),
        *_random("outlier"),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
