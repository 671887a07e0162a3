"""Fusion/fused_repeat_interleave_log_softmax: repeat_interleave, then log_softmax along the same dim."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import dtype_of, literal, rand_int, rand_tensor


def reference(input, repeats, dim=None, *, output_size=None, dtype=None, out=None) -> torch.Tensor:
    r = torch.repeat_interleave(input, repeats, dim)
    if dtype is not None:
        r = r.to(dtype)
    return torch.log_softmax(r, 0 if dim is None else dim, dtype=dtype)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    reps = params["repeats"]
    if reps == "per_element":
        dim = params.get("dim")
        n = x.numel() if dim is None else x.shape[dim]
        reps = rand_int((n,), 1, 4, gen, device)
    kwargs = {"dim": params["dim"]} if "dim" in params else {}
    if "dtype" in params:
        kwargs["dtype"] = dtype_of(params["dtype"])
    return Call((x, reps), kwargs)


def _out_numel(input, repeats, dim):
    if isinstance(repeats, torch.Tensor) and repeats.numel() > 1:
        total = int(repeats.sum())
        return total * (input.numel() // (input.numel() if dim is None else input.shape[dim]))
    return input.numel() * int(repeats)


def _flops(input, repeats, dim=None, *, output_size=None, dtype=None, out=None):
    return 6.0 * _out_numel(input, repeats, dim)


def _bytes(input, repeats, dim=None, *, output_size=None, dtype=None, out=None):
    out_size = torch.empty((), dtype=dtype).element_size() if dtype is not None else input.element_size()
    reps = repeats.numel() * repeats.element_size() if isinstance(repeats, torch.Tensor) else 0
    return float(input.numel() * input.element_size() + reps + _out_numel(input, repeats, dim) * out_size)


_SQ = [[1.0, 2.0], [3.0, 4.0]]

TASK = Task(
    entry="fused_repeat_interleave_log_softmax",
    dtypes=("float32", "float64", "int64"),
    signature=(
        "fused_repeat_interleave_log_softmax(input: torch.Tensor, repeats: int | torch.Tensor, "
        "dim: int | None = None, *, output_size: int | None = None, dtype: torch.dtype | None = None, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Let r = torch.repeat_interleave(input, repeats, dim): each slice along `dim` is repeated `repeats` "
        "times in place (repeats is an int, or an int64 tensor with one count per slice); with dim=None the "
        "input is flattened first and the result is 1-D. If `dtype` is given (e.g. torch.float64), cast r to "
        "it. Return log_softmax of r along `dim` (along dim 0 of the flattened result when dim is None): "
        "r - max - log(sum(exp(r - max))). output_size and out are ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_flat", FIXED, {"values": [1.0, 2.0, 3.0], "repeats": 2}),
        Case("fixed_dim1", FIXED, {"values": _SQ, "repeats": 2, "dim": 1}),
        Case("fixed_fp64", FIXED, {"values": [1.0, 2.0, 3.0], "repeats": 3, "dtype": "float64"}),
        Case("fixed_dim0_fp32", FIXED, {"values": _SQ, "repeats": 2, "dim": 0, "dtype": "float32"}),
        Case("standard_dim1", STANDARD, {"shape": (32, 128), "mode": "standard", "repeats": 2, "dim": 1}),
        Case("standard_per_element", STANDARD, {"shape": (64,), "mode": "standard", "repeats": "per_element",
                                                "dim": 0}),
        Case("standard_2d_per_row", STANDARD, {"shape": (24, 40), "mode": "standard", "repeats": "per_element",
                                               "dim": 0}),
        Case("outlier_dim1", OUTLIER, {"shape": (32, 128), "mode": "outlier", "repeats": 2, "dim": 1}),
        Case("outlier_per_element", OUTLIER, {"shape": (64,), "mode": "outlier", "repeats": "per_element",
                                              "dim": 0}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "repeats": 2, "dim": 0})
          for e in (22, 23, 24, 25)],
    flops=_flops,
    bytes=_bytes,
)
