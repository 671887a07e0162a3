"""Math/softmax: softmax along one dimension of an fp32 tensor, with an optional output dtype (fp64)."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import dtype_of, literal, rand_tensor


def reference(input: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    return torch.softmax(input, dim, dtype=dtype)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"dtype": dtype_of(params["dtype"])} if "dtype" in params else {}
    return Call((x, params["dim"]), kwargs)


def _flops(input, dim, dtype=None):
    return 3.0 * input.numel()


def _bytes(input, dim, dtype=None):
    out_size = torch.empty((), dtype=dtype).element_size() if dtype is not None else input.element_size()
    return float(input.numel() * (input.element_size() + out_size))


_GRID = [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]

TASK = Task(
    entry="softmax",
    dtypes=("float32", "float64"),
    signature="softmax(input: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor",
    description=(
        "Return softmax along `dim` (negative dims count from the end): exp(x - max) / sum(exp(x - max)) over "
        "that dimension, as a new tensor of the input's shape. If `dtype` is given (e.g. torch.float64), cast "
        "the input to it first and return a tensor of that dtype; otherwise the output is fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_dim1", FIXED, {"values": _GRID, "dim": 1}),
        Case("fixed_dim0", FIXED, {"values": _GRID, "dim": 0}),
        Case("fixed_fp64", FIXED, {"values": _GRID, "dim": 1, "dtype": "float64"}),
        Case("standard_100x100", STANDARD, {"shape": (100, 100), "mode": "standard", "dim": 1}),
        Case("standard_dim0", STANDARD, {"shape": (64, 128), "mode": "standard", "dim": 0}),
        Case("standard_dim1", STANDARD, {"shape": (64, 128), "mode": "standard", "dim": 1}),
        Case("standard_dim_neg1", STANDARD, {"shape": (64, 128), "mode": "standard", "dim": -1}),
        Case("outlier_dim0", OUTLIER, {"shape": (64, 128), "mode": "outlier", "dim": 0}),
        Case("outlier_dim1", OUTLIER, {"shape": (64, 128), "mode": "outlier", "dim": 1}),
        Case("outlier_dim_neg1", OUTLIER, {"shape": (64, 128), "mode": "outlier", "dim": -1}),
    ],
    perf=[
        Case(f"1024x2^{e}", PERF, {"shape": (1024, 2**e), "mode": "standard", "dim": 1}) for e in (14, 15, 16, 17)
    ],
    flops=_flops,
    bytes=_bytes,
)
