"""Index/permute_copy: a contiguous copy of a tensor with its dimensions reordered (int64 or fp32).

Upstream's perf cubes (d, d, d, d) with d = 8..128 are mostly tiny; kbx times d = 64, 96, 128 with
the dims reversed.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, dims: list) -> torch.Tensor:
    return torch.permute_copy(input, dims)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], params.get("dtype", "int64"), device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device, outlier_scale=20.0)
    return Call((x, list(params["dims"])))


def _flops(input, dims):
    return float(input.numel())


def _bytes(input, dims):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="permute_copy",
    dtypes=("float32", "int64"),
    signature="permute_copy(input: torch.Tensor, dims: list[int]) -> torch.Tensor",
    description=(
        "Return a new contiguous tensor equal to input.permute(dims): output dimension i is input dimension "
        "dims[i], so out[i0, ..., ik] = input at the index whose entry dims[j] is ij. The dtype (fp32 or int64) "
        "is preserved and the result must not share memory with the input."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_transpose_int64", FIXED, {"values": [[1, 2], [3, 4]], "dims": [1, 0]}),
        Case("fixed_3d_int64", FIXED, {"values": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]], "dims": [2, 0, 1]}),
        Case("fixed_1d_int64", FIXED, {"values": [1, 2, 3, 4], "dims": [0]}),
        Case("reverse_2x3x4x5", STANDARD, {"shape": (2, 3, 4, 5), "mode": "uniform", "dims": [3, 2, 1, 0]}),
        Case("standard_4x8x16x32", STANDARD, {"shape": (4, 8, 16, 32), "mode": "standard", "dims": [3, 0, 2, 1]}),
        Case("outlier_4x8x16x32", OUTLIER, {"shape": (4, 8, 16, 32), "mode": "outlier", "dims": [3, 0, 2, 1]}),
        Case("inner_kept_6x70x33", STANDARD, {"shape": (6, 70, 33), "mode": "standard", "dims": [1, 0, 2]}),
    ],
    perf=[Case(f"d{d}", PERF, {"shape": (d, d, d, d), "mode": "uniform", "dims": [3, 2, 1, 0]}) for d in (64, 96, 128)],
    flops=_flops,
    bytes=_bytes,
    notes="perf cubes d = 64, 96, 128 (upstream 8..128); adds a 3-D case keeping the innermost dim",
)
