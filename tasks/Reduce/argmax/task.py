"""Reduce/argmax: index of the largest value along one dim (first occurrence on ties, NaN counts as largest).

kbx additions: fixed cases with ties and with NaN pin down torch's rules (upstream's fixed cases had
neither), and perf inputs stay fp16 uniform as upstream, where exact ties are frequent.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    return torch.argmax(input_tensor, dim=dim, keepdim=keepdim)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], params.get("dtype", "int64"), device)
    else:
        x = rand_tensor(params["shape"], params.get("dtype", "float32"), params["mode"], gen, device)
    kwargs = {"keepdim": params["keepdim"]} if "keepdim" in params else {}
    return Call((x, params["dim"]), kwargs)


def _flops(input_tensor, dim, keepdim=False):
    return float(input_tensor.numel())


def _bytes(input_tensor, dim, keepdim=False):
    n_out = input_tensor.numel() // max(input_tensor.shape[dim], 1) if input_tensor.dim() else 1
    return float(input_tensor.numel() * input_tensor.element_size() + n_out * 8)


_CUBE = [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]
_NAN = float("nan")


def _random(mode):
    kind = STANDARD if mode == "standard" else OUTLIER
    return [
        Case(f"{mode}_2d_dim0", kind, {"shape": (128, 256), "mode": mode, "dim": 0}),
        Case(f"{mode}_2d_dim1", kind, {"shape": (128, 256), "mode": mode, "dim": 1}),
        Case(f"{mode}_3d_dim2", kind, {"shape": (8, 16, 32), "mode": mode, "dim": 2}),
        Case(f"{mode}_3d_dim1_keepdim", kind, {"shape": (8, 16, 32), "mode": mode, "dim": 1, "keepdim": True}),
    ]


TASK = Task(
    entry="argmax",
    dtypes=("float32", "int64", "float16"),
    signature="argmax(input_tensor: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor",
    description=(
        "Return the int64 indices of the maximum values of `input_tensor` along dimension `dim` (negative "
        "allowed), as torch.argmax: on ties the smallest index wins, and NaN counts as larger than every "
        "number (the first NaN along the dim wins). With keepdim=True the reduced dim stays with size 1. "
        "Inputs are int64, fp32 or fp16."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2d_dim0", FIXED, {"values": [[1, 3, 2], [4, 0, 5]], "dim": 0}),
        Case("fixed_2d_dim1", FIXED, {"values": [[1, 3, 2], [4, 0, 5]], "dim": 1}),
        Case("fixed_3d_dim2", FIXED, {"values": _CUBE, "dim": 2}),
        Case("fixed_3d_dim1_keepdim", FIXED, {"values": _CUBE, "dim": 1, "keepdim": True}),
        Case("fixed_ties", FIXED, {"values": [[2, 5, 5, 1, 5], [3, 3, 3, 3, 3]], "dim": -1}),
        Case(
            "fixed_nan_inf",
            FIXED,
            {"values": [[1.0, _NAN, 3.0, _NAN], [float("inf"), 2.0, float("inf"), -1.0]], "dtype": "float32",
             "dim": 1},
        ),  # fmt: skip
        *_random("standard"),
        *_random("outlier"),
    ],
    perf=[
        Case(f"n2^{e}_fp16", PERF, {"shape": (2**e,), "mode": "uniform", "dtype": "float16", "dim": 0})
        for e in (26, 27, 28, 29)
    ],
    flops=_flops,
    bytes=_bytes,
    notes="adds tie and NaN fixed cases (torch's first-occurrence and NaN-is-max rules).",
)
