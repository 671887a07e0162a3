"""Fusion/fused_softmax_log: softmax(log(x), dim) of a positive tensor, with an optional dtype cast first."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import dtype_of, literal, rand_tensor


def reference(input, dim=-1, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return torch.softmax(torch.log(input), dim=dim)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if params["mode"] != "uniform":
            x = x.abs() + 0.1  # upstream's positive inputs
    kwargs = {k: params[k] for k in ("dim",) if k in params}
    if "dtype" in params:
        kwargs["dtype"] = dtype_of(params["dtype"])
    return Call((x,), kwargs)


def _flops(input, dim=-1, dtype=None):
    return 5.0 * input.numel()


def _bytes(input, dim=-1, dtype=None):
    out_size = dtype.itemsize if dtype is not None else input.element_size()
    return float(input.numel() * (input.element_size() + out_size))


_A = [[1.0, 2.0], [3.0, 4.0]]

TASK = Task(
    entry="fused_softmax_log",
    dtypes=("float32", "float64"),
    signature="fused_softmax_log(input: torch.Tensor, dim: int = -1, dtype: torch.dtype | None = None) -> torch.Tensor",
    description=(
        "If `dtype` is given, first cast `input` to it. Then return softmax(log(x), dim) as a new tensor of the "
        "same shape and (cast) dtype: along `dim`, exp(log x_i - m) / sum_j exp(log x_j - m) with m the maximum "
        "of log x. For positive x this is x_i / sum_j x_j; zeros give log x = -inf (weight 0), and any negative "
        "element makes its whole slice NaN, as torch does."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, {"values": _A}),
        Case("fixed_dim0", FIXED, {"values": _A, "dim": 0}),
        Case("fixed_float64", FIXED, {"values": _A, "dtype": "float64"}),
        Case("fixed_2x3", FIXED, {"values": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}),
        Case("standard", STANDARD, {"shape": (128, 256), "mode": "standard", "dim": 1}),
        Case("standard_dim0", STANDARD, {"shape": (128, 256), "mode": "standard", "dim": 0}),
        Case("outlier", OUTLIER, {"shape": (128, 256), "mode": "outlier", "dim": 1}),
    ],
    perf=[Case(f"1024x2^{e}", PERF, {"shape": (1024, 2**e), "mode": "uniform"}) for e in (14, 15, 16, 17)],
    flops=_flops,
    bytes=_bytes,
)
