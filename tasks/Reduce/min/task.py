"""Reduce/min: minimum values and their int64 indices along one dim (torch.min with a dim).

kbx additions: fixed cases with ties (first occurrence wins) and NaN (NaN is the minimum, at its first
position), which torch defines and upstream never tested. Perf shapes stop at 2^18 x 1024 fp32
(1 GiB) instead of upstream's 2^19 x 1024 (2 GiB).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor, dim: int, keepdim: bool = False):
    values, indices = torch.min(input_tensor, dim=dim, keepdim=keepdim)
    return values, indices


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], params.get("dtype", "int64"), device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"keepdim": params["keepdim"]} if "keepdim" in params else {}
    return Call((x, params["dim"]), kwargs)


def _n_out(input_tensor, dim):
    return input_tensor.numel() // max(input_tensor.shape[dim], 1)


def _flops(input_tensor, dim, keepdim=False):
    return float(input_tensor.numel())


def _bytes(input_tensor, dim, keepdim=False):
    n_out = _n_out(input_tensor, dim)
    return float(input_tensor.numel() * input_tensor.element_size() + n_out * (input_tensor.element_size() + 8))


_CUBE = [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]
_NAN = float("nan")


def _random(mode):
    kind = STANDARD if mode == "standard" else OUTLIER
    return [
        Case(f"{mode}_2d_dim0", kind, {"shape": (128, 256), "mode": mode, "dim": 0}),
        Case(f"{mode}_2d_dim1", kind, {"shape": (128, 256), "mode": mode, "dim": 1}),
        Case(f"{mode}_3d_dim2_keepdim", kind, {"shape": (8, 16, 32), "mode": mode, "dim": 2, "keepdim": True}),
    ]


TASK = Task(
    entry="min",
    dtypes=("float32", "int64"),
    signature="min(input_tensor: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]",
    description=(
        "Return a tuple (values, indices): the minimum of `input_tensor` along dimension `dim` (negative allowed) "
        "and the int64 index where it occurs, as torch.min(input, dim, keepdim). On ties the smallest index wins; "
        "a NaN along the dim makes the value NaN and the index that of the first NaN. With keepdim=True the "
        "reduced dim stays with size 1. values keep the input dtype (int64 or fp32)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2d_dim0", FIXED, {"values": [[1, 2, 3], [4, 0, 6]], "dim": 0}),
        Case("fixed_2d_dim1", FIXED, {"values": [[1, 2, 3], [4, 0, 6]], "dim": 1}),
        Case("fixed_3d_dim2_keepdim", FIXED, {"values": _CUBE, "dim": 2, "keepdim": True}),
        Case("fixed_1d", FIXED, {"values": [1, 2, 3, 0, 4, 5], "dim": 0}),
        Case("fixed_ties", FIXED, {"values": [[4, 1, 7, 1, 1], [2, 2, 2, 2, 2]], "dim": 1}),
        Case(
            "fixed_nan_inf",
            FIXED,
            {"values": [[1.0, _NAN, -3.0, _NAN], [float("-inf"), 2.0, float("-inf"), 5.0]], "dtype": "float32",
             "dim": -1},
        ),  # fmt: skip
        *_random("standard"),
        *_random("outlier"),
    ],
    perf=[Case(f"rows2^{e}_x1024", PERF, {"shape": (2**e, 1024), "mode": "uniform", "dim": 0}) for e in (15, 16, 17, 18)],
    flops=_flops,
    bytes=_bytes,
    notes="adds tie and NaN fixed cases; perf stops at 2^18 x 1024 fp32 (1 GiB input).",
)
