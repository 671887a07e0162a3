"""Index/index_select: gather whole slices of a tensor along one dimension at 1-D int64 positions.

The fixed cases fill the input with 0, 1, 2, ... (upstream draws randn there) so that every
gathered element names its source; the comparison is exact either way.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, numel, rand_int, rand_tensor


def reference(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    return torch.index_select(input, dim, index)


def make_inputs(params, gen, device) -> Call:
    shape = params["shape"]
    if params.get("arange"):
        x = torch.arange(numel(shape), dtype=torch.float32, device=device).reshape(shape)
    else:
        x = rand_tensor(shape, "float32", params["mode"], gen, device, outlier_scale=20.0)
    dim = params["dim"]
    if "index" in params:
        index = literal(params["index"], "int64", device)
    else:
        index = rand_int((params["k"],), 0, shape[dim], gen, device)
    return Call((x, dim, index))


def _flops(input, dim, index):
    return 0.0


def _bytes(input, dim, index):
    picked = input.numel() // input.shape[dim] * index.numel()
    # read the picked slices, write them once, read the index
    return 2.0 * picked * input.element_size() + index.numel() * index.element_size()


TASK = Task(
    entry="index_select",
    dtypes=("float32", "int64"),
    signature="index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor",
    description=(
        "Return a new contiguous tensor holding the slices of `input` along dimension `dim` taken at "
        "the positions listed in the 1-D int64 tensor `index` (positions may repeat and come in any "
        "order): the result has input's shape except that size `dim` becomes len(index), and "
        "out[..., i, ...] = input[..., index[i], ...] along `dim`. Same dtype as input."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("rows_2d", FIXED, {"shape": (6, 4), "arange": True, "dim": 0, "index": [0, 2, 5]}),
        Case("cols_2d", FIXED, {"shape": (3, 8), "arange": True, "dim": 1, "index": [1, 3, 7]}),
        Case("last_3d", FIXED, {"shape": (2, 3, 10), "arange": True, "dim": 2, "index": [0, 4, 9]}),
        Case("repeat_middle", FIXED, {"shape": (2, 5, 3), "arange": True, "dim": 1, "index": [4, 4, 0, 2, 0]}),
        Case("standard", STANDARD, {"shape": (8, 32, 256), "mode": "standard", "dim": 2, "k": 64}),
        Case("outlier", OUTLIER, {"shape": (8, 32, 256), "mode": "outlier", "dim": 2, "k": 64}),
    ],
    # upstream's layout: N rows of 256 floats, N/8 random rows picked along dim 0
    perf=[
        Case(f"rows2^{e}", PERF, {"shape": (2**e, 256), "mode": "uniform", "dim": 0, "k": 2**e // 8})
        for e in (18, 19, 20)
    ],
    flops=_flops,
    bytes=_bytes,
)
