"""Fusion/fused_gather_masked_fill: torch.gather along a dim, then fill positions where a mask is True.

kbx adds a broadcast-mask case and a case passing `out` (judged after the call).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_bool, rand_int, rand_tensor


def reference(input, dim, index, mask, value, *, sparse_grad=False, out=None) -> torch.Tensor:
    result = torch.gather(input, dim, index, sparse_grad=sparse_grad).masked_fill(mask, value)
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    dim = params["dim"]
    if "values" in params:
        x = literal(params["values"], "int64", device)
        idx = literal(params["index"], "int64", device)
        mask = literal(params["mask"], "bool", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        idx_shape = params["index_shape"]
        idx = rand_int(idx_shape, 0, x.shape[dim], gen, device)
        mask = rand_bool(params.get("mask_shape", idx_shape), gen, device)
    kwargs = {"sparse_grad": params["sparse_grad"]} if "sparse_grad" in params else {}
    if params.get("out"):
        kwargs["out"] = torch.zeros(idx.shape, dtype=x.dtype, device=device)
    return Call((x, dim, idx, mask, params["value"]), kwargs)


def _flops(input, dim, index, mask, value, *, sparse_grad=False, out=None):
    return float(index.numel())


def _bytes(input, dim, index, mask, value, *, sparse_grad=False, out=None):
    # gathered input elements, the index, the mask and the output
    return float(index.numel() * (2 * input.element_size() + index.element_size()) + mask.numel())


TASK = Task(
    entry="fused_gather_masked_fill",
    dtypes=("float32", "int64", "bool"),
    signature=(
        "fused_gather_masked_fill(input: torch.Tensor, dim: int, index: torch.Tensor, mask: torch.Tensor, "
        "value: float, *, sparse_grad: bool = False, out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Gather like torch.gather: g has index's shape and g[..., i_dim, ...] = input[..., index[...], ...] "
        "along `dim` (the other coordinates are the output's own). Then set g to `value` (converted to g's "
        "dtype, e.g. -1.0 becomes -1 for int64 input) wherever the bool `mask`, broadcast to g's shape, is "
        "True, and return g (input's dtype). sparse_grad has no effect on the values. If `out` is given, write "
        "the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_swap", FIXED, {"values": [[1, 2], [3, 4]], "dim": 1, "index": [[0, 1], [1, 0]],
                                   "mask": [[True, False], [False, True]], "value": -1.0}),
        Case("fixed_3cols", FIXED, {"values": [[5, 6, 7], [8, 9, 10]], "dim": 1, "index": [[0, 2], [1, 0]],
                                    "mask": [[False, True], [True, False]], "value": 0.0}),
        Case("fixed_sparse_grad", FIXED, {"values": [[11, 12], [13, 14]], "dim": 1, "index": [[1, 1], [0, 1]],
                                          "mask": [[True, True], [False, False]], "value": 99.0,
                                          "sparse_grad": True}),
        Case("fixed_2x4", FIXED, {"values": [[1, 2, 3, 4], [5, 6, 7, 8]], "dim": 1,
                                  "index": [[3, 2, 1, 0], [0, 1, 2, 3]],
                                  "mask": [[True, False, True, False], [False, True, False, True]], "value": -5.0}),
        Case("standard", STANDARD, {"shape": (64, 128), "index_shape": (64, 32), "dim": 1, "mode": "standard",
                                    "value": -1.0}),
        Case("standard_sparse_grad", STANDARD, {"shape": (64, 128), "index_shape": (64, 32), "dim": 1,
                                                "mode": "standard", "value": -1.0, "sparse_grad": True}),
        Case("standard_dim0_broadcast_mask", STANDARD, {"shape": (100, 48), "index_shape": (70, 48), "dim": 0,
                                                        "mask_shape": (1, 48), "mode": "standard", "value": 2.5}),
        Case("standard_out", STANDARD, {"shape": (64, 128), "index_shape": (64, 32), "dim": 1, "mode": "standard",
                                        "value": -1.0, "out": True}),
        Case("outlier", OUTLIER, {"shape": (64, 128), "index_shape": (64, 32), "dim": 1, "mode": "outlier",
                                  "value": -1.0}),
    ],
    perf=[
        Case(f"S2^{e}", PERF, {"shape": (2**e, 1024), "index_shape": (2**e, 1024), "dim": 0, "mode": "uniform",
                               "value": 0.5})
        for e in (11, 12, 13, 14)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds a broadcast-mask case and an `out=` case judged after the call.",
)
