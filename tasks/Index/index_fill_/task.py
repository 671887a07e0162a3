"""Index/index_fill_: in place, set the slices of an fp32 tensor at given indices along a dim to a scalar.

Upstream moved results to the CPU and compared only the returned tensor; kbx judges the returned
tensor and the mutated input. kbx adds a dim=1 case and a 3-D case with negative indices. Upstream's
perf inputs (at most 2^23 elements) are tiny; kbx's are 2^24..2^27 elements with half as many indices.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(dim: int, x: torch.Tensor, index: torch.Tensor, value: float) -> torch.Tensor:
    return x.index_fill_(dim, index, value)


def make_inputs(params, gen, device) -> Call:
    dim, value = params["dim"], params["value"]
    if "index" in params:
        x = torch.zeros(tuple(params["shape"]), dtype=torch.float32, device=device)
        index = literal(params["index"], "int64", device)
        return Call((dim, x, index, value))
    shape = tuple(params["shape"])
    x = rand_tensor(shape, "float32", params["mode"], gen, device, outlier_scale=20.0)
    size = shape[dim]
    low = -size if params.get("negative") else 0
    index = rand_int((params["n_index"],), low, size, gen, device)
    return Call((dim, x, index, value))


def _flops(dim, x, index, value):
    return float(x.numel() // x.shape[dim] * index.numel())


def _bytes(dim, x, index, value):
    # the index read once, one element written per (slice element, index)
    per_slice = x.numel() // x.shape[dim]
    return float(index.numel() * index.element_size() + per_slice * index.numel() * x.element_size())


TASK = Task(
    entry="index_fill_",
    dtypes=("float32", "int64"),
    signature="index_fill_(dim: int, x: torch.Tensor, index: torch.Tensor, value: float) -> torch.Tensor",
    description=(
        "In place, as Tensor.index_fill_: for every entry i of the 1-D int64 tensor index, set the whole "
        "slice of the fp32 tensor x at position i along dimension dim to the scalar value (cast to fp32). "
        "Negative indices count from the end; duplicate indices are allowed. Note dim is the first argument. "
        "Return x itself (the same tensor object, modified)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_rows", FIXED, {"shape": (3, 3), "dim": 0, "index": [0, 2], "value": 5.0}),
        Case("fixed_column", FIXED, {"shape": (3, 3), "dim": 1, "index": [1], "value": 3.0}),
        Case("fixed_1x1", FIXED, {"shape": (1, 1), "dim": 0, "index": [0], "value": 7.0}),
        Case("fixed_5x5", FIXED, {"shape": (5, 5), "dim": 0, "index": [1, 3, 4], "value": 9.0}),
        Case("standard", STANDARD, {"shape": (64, 128), "dim": 0, "n_index": 16, "value": 3.14, "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 128), "dim": 0, "n_index": 16, "value": 3.14, "mode": "outlier"}),
        Case("standard_dim1", STANDARD, {"shape": (64, 128), "dim": 1, "n_index": 40, "value": -2.5,
                                         "mode": "standard"}, extra=True),  # fmt: skip
        Case("standard_3d_negative", STANDARD, {"shape": (4, 6, 10), "dim": 1, "n_index": 5, "value": 0.5,
                                                "mode": "standard", "negative": True}, extra=True),  # fmt: skip
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "dim": 0, "n_index": 2 ** (e - 1), "value": 1.0, "mode": "standard"})
        for e in (24, 25, 26, 27)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="judged on the returned and the mutated tensor; adds dim=1 and negative-index cases; perf 2^24..2^27",
)
