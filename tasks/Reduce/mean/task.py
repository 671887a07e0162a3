"""Reduce/mean: arithmetic mean over one or more dims, with keepdim and an optional dtype cast."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import dtype_of, literal, rand_tensor


def reference(input_tensor, dim, keepdim=False, dtype=None) -> torch.Tensor:
    return torch.mean(input_tensor, dim=dim, keepdim=keepdim, dtype=dtype)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], params.get("dtype", "float32"), device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {}
    if "keepdim" in params:
        kwargs["keepdim"] = params["keepdim"]
    if "out_dtype" in params:
        kwargs["dtype"] = dtype_of(params["out_dtype"])
    return Call((x, params["dim"]), kwargs)


def _flops(input_tensor, dim, keepdim=False, dtype=None):
    return 2.0 * input_tensor.numel()


def _bytes(input_tensor, dim, keepdim=False, dtype=None):
    out = torch.mean(torch.empty(input_tensor.shape, device="meta"), dim=dim, keepdim=keepdim)
    return float(input_tensor.numel() * input_tensor.element_size() + out.numel() * 4)


_SQ = [[1.0, 2.0], [3.0, 4.0]]
_CUBE = [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]


def _random(mode):
    kind = STANDARD if mode == "standard" else OUTLIER
    return [
        Case(f"{mode}_2d_dim0", kind, {"shape": (128, 256), "mode": mode, "dim": 0}),
        Case(f"{mode}_2d_dim1_keepdim", kind, {"shape": (128, 256), "mode": mode, "dim": 1, "keepdim": True}),
        Case(f"{mode}_3d_dims_0_2", kind, {"shape": (8, 16, 32), "mode": mode, "dim": (0, 2)}),
    ]


TASK = Task(
    entry="mean",
    dtypes=("float32", "int32"),
    signature=(
        "mean(input_tensor: torch.Tensor, dim: int | tuple[int, ...], keepdim: bool = False, "
        "dtype: torch.dtype | None = None) -> torch.Tensor"
    ),
    description=(
        "Arithmetic mean of `input_tensor` over the dimension(s) `dim` (an int or a tuple of ints, negative "
        "allowed), as torch.mean. With keepdim=True the reduced dims stay with size 1. If `dtype` is given "
        "(e.g. torch.float32 for an int32 input) the input is converted to it first and the result has that "
        "dtype; otherwise the result keeps the (floating) input dtype. Accumulate fp32 means in fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_dim0", FIXED, {"values": _SQ, "dim": 0}),
        Case("fixed_dim1_keepdim", FIXED, {"values": _SQ, "dim": 1, "keepdim": True}),
        Case("fixed_dims_0_2", FIXED, {"values": _CUBE, "dim": (0, 2)}),
        Case("fixed_int32_to_float32", FIXED, {"values": [[1, 2], [3, 4]], "dtype": "int32", "dim": 0,
                                               "out_dtype": "float32"}),  # fmt: skip
        *_random("standard"),
        *_random("outlier"),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "dim": 0}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
