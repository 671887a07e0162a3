"""Fusion/fused_index_select_eq: torch.eq(torch.index_select(input, dim, index), other) as a bool tensor.

kbx departures: perf inputs are fp32 (rows, 128) with small integer values (upstream: randn, so comparing
with 0.0 gave an all-False output that any constant kernel matches); rows = 2^19..2^21 with rows/2
selected (upstream: rows/8 of up to 2^23 rows, 4 GB inputs). kbx adds a dim-1 case with repeated
indices and broadcast `other`, and its standard case perturbs about a quarter of the exact copy
(upstream compared with an exact copy: all True).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(input, dim, index, other, *, out=None) -> torch.Tensor:
    y = torch.eq(torch.index_select(input, dim, index), other)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(params, gen, device) -> Call:
    dim = params["dim"]
    if "values" in params:
        x = literal(params["values"], "int64", device)
        idx = literal(params["index"], "int64", device)
        o = params["other"]
        other = literal(o, "int64", device) if isinstance(o, list) else o
        return Call((x, dim, idx, other))
    rows, cols = params["shape"]
    n_idx = params["n_index"]
    if params.get("perf"):
        x = torch.floor(rand_tensor((rows, cols), "float32", "uniform", gen, device) * 8)
        idx = rand_int((n_idx,), 0, x.shape[dim], gen, device)
        return Call((x, dim, idx, 0.0))
    x = rand_int((rows, cols), -5, 6, gen, device)
    idx = rand_int((n_idx,), 0, x.shape[dim], gen, device)
    if params["other"] == "copy":
        other = torch.index_select(x, dim, idx).clone()
        if params.get("perturb"):  # change about a quarter of the entries
            flip = rand_int(other.shape, 0, 4, gen, device) == 0
            other = torch.where(flip, other + 1, other)
    elif params["other"] == "row":
        other = rand_int((rows, 1) if dim == 1 else (1, cols), -5, 6, gen, device)
    else:
        other = rand_int(torch.index_select(x, dim, idx).shape, -5, 6, gen, device)
    return Call((x, dim, idx, other))


def _sel(input, dim, index):
    return input.numel() // input.shape[dim] * index.numel()


def _flops(input, dim, index, other, *, out=None):
    return float(_sel(input, dim, index))


def _bytes(input, dim, index, other, *, out=None):
    n = _sel(input, dim, index)
    n_other = other.numel() * other.element_size() if isinstance(other, torch.Tensor) else 0
    return float(n * input.element_size() + n + n_other + index.numel() * index.element_size())


_M = [[1, 2, 3], [4, 5, 6]]
_RAND = {"shape": (128, 64), "dim": 0, "n_index": 32}

TASK = Task(
    entry="fused_index_select_eq",
    dtypes=("int64", "float32", "bool"),
    signature=(
        "fused_index_select_eq(input: torch.Tensor, dim: int, index: torch.Tensor, other: torch.Tensor | float, *, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Select the slices of `input` at the int64 positions `index` along `dim` (like torch.index_select; "
        "indices may repeat), then compare elementwise for equality with `other` (a tensor broadcastable to the "
        "selection, or a Python number). Return the bool result (written into `out` and returned when `out` is "
        "given)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_dim0_same", FIXED, {"values": _M, "dim": 0, "index": [0, 1], "other": _M}),
        Case("fixed_dim1", FIXED, {"values": _M, "dim": 1, "index": [0, 2], "other": [[1, 3], [4, 6]]}),
        Case("fixed_dim1_scalar", FIXED, {"values": _M, "dim": 1, "index": [1], "other": 2}),
        Case("fixed_dim0_row", FIXED, {"values": [[7, 8, 9], [10, 11, 12]], "dim": 0, "index": [1],
                                       "other": [[10, 11, 12]]}),  # fmt: skip
        Case("standard_copy", STANDARD, {**_RAND, "other": "copy", "perturb": True, "mode": "standard"}),
        Case("outlier_random", OUTLIER, {**_RAND, "other": "random", "mode": "outlier"}),
        Case("standard_dim1_broadcast", STANDARD, {"shape": (48, 96), "dim": 1, "n_index": 70, "other": "row",
                                                   "mode": "standard"}),  # fmt: skip
    ],
    perf=[
        Case(f"rows2^{e}", PERF, {"shape": (2**e, 128), "dim": 0, "n_index": 2**e // 2, "perf": True})
        for e in (19, 20, 21)
    ],
    flops=_flops,
    bytes=_bytes,
    notes="perf inputs hold small integers so the bool output is not constant; extra dim-1 broadcast case.",
)
