"""Index/scatter: out-of-place Tensor.scatter of fp32 values along a dim, indices unique per scattered line.

The indices along each scattered line are distinct, so the result is deterministic (upstream's
older duplicate-index version was not). Upstream's perf inputs (at most 8192 x 128) are tiny; kbx's
are (2^i, 128) for i = 17..20, scattering 2^(i-1) rows per column along dim 0, with the distinct
row indices built as (a random permutation + a per-column shift) mod the row count.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    return input.scatter(dim, index, src)


def make_inputs(params, gen, device) -> Call:
    dim = params["dim"]
    if "index" in params:
        base = torch.zeros(tuple(params["shape"]), dtype=torch.float32, device=device)
        index = literal(params["index"], "int64", device)
        index = index.expand(*params["index_shape"]).contiguous() if "index_shape" in params else index
        src = rand_tensor(tuple(index.shape), "float32", "standard", gen, device)
        return Call((base, dim, index, src))
    shape, mode = tuple(params["shape"]), params["mode"]
    if params.get("base") == "zeros":
        base = torch.zeros(shape, dtype=torch.float32, device=device)
    else:
        base = rand_tensor(shape, "float32", mode, gen, device, outlier_scale=20.0)
    k = params["k"]
    if params.get("index_kind") == "shift":  # dim 0 of a 2-D input: (perm[r] + shift[c]) mod rows
        rows, cols = shape
        perm = torch.randperm(rows, generator=gen, device=device)[:k]
        shift = torch.randint(0, rows, (cols,), generator=gen, device=device)
        index = (perm[:, None] + shift[None, :]) % rows
    else:  # the first k entries of an independent random permutation of each line (dim is the last)
        keys = rand_tensor(shape, "float32", "uniform", gen, device)
        index = torch.argsort(keys, dim=-1)[..., :k].contiguous()
    src = rand_tensor(tuple(index.shape), "float32", mode, gen, device, outlier_scale=20.0)
    return Call((base, dim, index, src))


def _flops(input, dim, index, src):
    return 0.0


def _bytes(input, dim, index, src):
    # the input copied (read and written) plus the index and src reads
    return float(2 * input.numel() * input.element_size() + index.numel() * index.element_size()
                 + src.numel() * src.element_size())  # fmt: skip


TASK = Task(
    entry="scatter",
    dtypes=("float32", "int64"),
    signature="scatter(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor",
    description=(
        "Out-of-place Tensor.scatter without reduction: return a copy of the fp32 input in which, for every "
        "position p of the int64 index tensor (same number of dims as input, each size no larger than "
        "input's), the element at p with its dim-coordinate replaced by index[p] is set to src[p] (src has "
        "index's shape). Indices are distinct along each scattered line, so the result is unique; input "
        "itself must not be modified."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("dim0_4x3", STANDARD, {"shape": (4, 3), "dim": 0, "index": [[0, 1, 2], [1, 2, 0]]}),
        Case("dim1_3x4", STANDARD, {"shape": (3, 4), "dim": 1, "index": [[0, 2], [1, 3], [2, 0]]}),
        Case("dim2_2x3x4", STANDARD, {"shape": (2, 3, 4), "dim": 2, "index": [[[0, 1], [1, 2], [2, 3]]],
                                      "index_shape": (2, 3, 2)}),  # fmt: skip
        Case("standard", STANDARD, {"shape": (4, 128, 256), "dim": 2, "k": 64, "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (4, 128, 256), "dim": 2, "k": 64, "mode": "outlier"}),
        Case("standard_dim0", STANDARD, {"shape": (300, 40), "dim": 0, "k": 150, "mode": "standard",
                                         "index_kind": "shift"}, extra=True),  # fmt: skip
    ],
    perf=[
        Case(f"rows2^{i}", PERF, {"shape": (2**i, 128), "dim": 0, "k": 2 ** (i - 1), "mode": "standard",
                                  "base": "zeros", "index_kind": "shift"})  # fmt: skip
        for i in (17, 18, 19, 20)
    ],
    flops=_flops,
    bytes=_bytes,
    notes="perf (2^17..2^20, 128) with shift-built distinct indices (upstream <= 8192 x 128); adds a dim-0 case",
)
