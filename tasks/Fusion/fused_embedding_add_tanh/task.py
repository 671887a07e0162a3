"""Fusion/fused_embedding_add_tanh: tanh(embedding(input_indices, weight) + other), with optional max_norm renorm.

With max_norm set, torch's embedding rescales the referenced rows of `weight` in place before the lookup,
so the task is marked inplace: the returned tensor and every tensor input after the call are compared.
kbx departures: upstream's fixed cases drew weight and other at random (here seeded cases of the same
shapes); kbx adds a random max_norm case. Perf shapes are (B, L, D) = (256..512)^3-ish with V = 1024,
the top of upstream's range.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(input_indices, weight, other, *, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False, out=None) -> torch.Tensor:  # fmt: skip
    e = F.embedding(input_indices, weight, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                    scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)  # fmt: skip
    y = torch.tanh(e + other)
    if out is not None:
        out.copy_(y)
    return y


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    v, d = params["vd"]
    if "idx" in params:
        idx = literal(params["idx"], "int64", device)
    else:
        idx = rand_int(params["idx_shape"], 0, v, gen, device)
    w = rand_tensor((v, d), "float32", mode, gen, device)
    other = rand_tensor((*idx.shape, d), "float32", mode, gen, device)
    kwargs = {k: params[k] for k in ("padding_idx", "max_norm", "norm_type") if k in params}
    return Call((idx, w, other), kwargs)


def _flops(input_indices, weight, other, *, padding_idx=None, max_norm=None, norm_type=2.0,
           scale_grad_by_freq=False, sparse=False, out=None):  # fmt: skip
    return 2.0 * other.numel()


def _bytes(input_indices, weight, other, *, padding_idx=None, max_norm=None, norm_type=2.0,
           scale_grad_by_freq=False, sparse=False, out=None):  # fmt: skip
    n_idx = input_indices.numel() * input_indices.element_size()
    return float(n_idx + (weight.numel() + 2 * other.numel()) * other.element_size())


_SMALL = {"vd": (5, 3), "idx": [1, 2, 3], "mode": "standard"}
_RAND = {"vd": (128, 64), "idx_shape": (4, 16), "padding_idx": 0}

TASK = Task(
    entry="fused_embedding_add_tanh",
    dtypes=("float32", "int64"),
    signature=(
        "fused_embedding_add_tanh(input_indices: torch.Tensor, weight: torch.Tensor, other: torch.Tensor, *, "
        "padding_idx: int | None = None, max_norm: float | None = None, norm_type: float = 2.0, "
        "scale_grad_by_freq: bool = False, sparse: bool = False, out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Look up rows of the (V, D) fp32 `weight` with the int64 indices (any shape I), add `other` (shape "
        "(*I, D)) and apply tanh; return the new (*I, D) tensor (also copied into `out` when given). padding_idx, "
        "scale_grad_by_freq and sparse do not change the forward result. If max_norm is not None, first rescale "
        "in place every row of `weight` referenced by the indices whose norm_type-norm exceeds max_norm by "
        "max_norm / (norm + 1e-7), as torch.nn.functional.embedding does; the updated weight is checked too."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_padding_idx0", STANDARD, {**_SMALL, "idx": [0, 1, 2], "padding_idx": 0}),
        Case("small_max_norm1", STANDARD, {**_SMALL, "max_norm": 1.0}),
        Case("small_norm_type1", STANDARD, {**_SMALL, "norm_type": 1.0}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_max_norm", STANDARD, {"vd": (128, 64), "idx_shape": (8, 32), "max_norm": 7.5,
                                             "mode": "standard"}),  # fmt: skip
        Case("standard_max_norm_l1", STANDARD, {"vd": (64, 16), "idx_shape": (40,), "max_norm": 12.0,
                                                "norm_type": 1.0, "mode": "standard"}),  # fmt: skip
    ],
    perf=[
        Case(f"B{b}_L{l}_D{d}", PERF, {"vd": (1024, d), "idx_shape": (b, l), "mode": "uniform"})
        for b, l, d in ((256, 256, 256), (256, 256, 512), (256, 512, 512), (512, 512, 512))
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="inplace: weight's max_norm renorm is judged; fixed random cases seeded; random max_norm cases added.",
)
