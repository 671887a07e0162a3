"""Fusion/fused_cosine_embedding_loss_with_normalization: hinge loss on cosines of L2-normalized rows.

The loss is upstream's own formula, not torch's cosine_embedding_loss (see the description).
kbx departures: upstream's fixed cases drew their inputs at random (here seeded cases of the same
shapes); kbx adds an invalid-reduction case (compared by exception type). Perf shapes are
(N, 256) with N = 2^16..2^20.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(input1, input2, target, margin: float = 0, reduction: str = "mean") -> torch.Tensor:
    a = F.normalize(input1, p=2.0, dim=1, eps=1e-12)
    b = F.normalize(input2, p=2.0, dim=1, eps=1e-12)
    cos = (a * b).sum(dim=1)
    loss = torch.clamp(1 - cos * target, min=0)
    if margin > 0:
        loss = torch.maximum(loss, margin - cos)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"Invalid reduction method: {reduction}")


def make_inputs(params, gen, device) -> Call:
    n, d = params["shape"]
    mode = params["mode"]
    x1 = rand_tensor((n, d), "float32", mode, gen, device)
    x2 = rand_tensor((n, d), "float32", mode, gen, device)
    if "target" in params:
        t = literal(params["target"], "int64", device)
    else:
        t = rand_int((n,), 0, 2, gen, device, params.get("target_dtype", "int64")) * 2 - 1
        if params.get("target_dtype") == "float32":
            t = t.float()
    kwargs = {k: params[k] for k in ("margin", "reduction") if k in params}
    return Call((x1, x2, t), kwargs)


def _flops(input1, input2, target, margin=0, reduction="mean"):
    return 8.0 * input1.numel()


def _bytes(input1, input2, target, margin=0, reduction="mean"):
    n_out = 1 if reduction in ("mean", "sum") else input1.shape[0]
    n_in = input1.numel() + input2.numel()
    return float((n_in + n_out) * input1.element_size() + target.numel() * target.element_size())


_SMALL = {"shape": (3, 5), "mode": "standard", "target": [1, -1, 1]}
_RAND = {"shape": (128, 256), "margin": 0.5, "reduction": "mean"}

TASK = Task(
    entry="fused_cosine_embedding_loss_with_normalization",
    dtypes=("float32", "int64"),
    signature=(
        "fused_cosine_embedding_loss_with_normalization(input1: torch.Tensor, input2: torch.Tensor, "
        "target: torch.Tensor, margin: float = 0, reduction: str = 'mean') -> torch.Tensor"
    ),
    description=(
        "For fp32 input1, input2 of shape (N, D) and a length-N target of +1/-1 values (int64 or fp32): "
        "L2-normalize each row, x / max(||x||, 1e-12); cos[i] = dot of the normalized rows i; "
        "loss[i] = max(0, 1 - cos[i] * target[i]); if margin > 0, loss[i] = max(loss[i], margin - cos[i]) for every "
        "row whatever its target. Return the fp32 mean of loss for reduction='mean', its sum for 'sum' (0-d "
        "tensors), the length-N loss for 'none'; any other reduction raises ValueError."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_margin05", STANDARD, {**_SMALL, "margin": 0.5}),
        Case("small_sum", STANDARD, {**_SMALL, "reduction": "sum"}),
        Case("small_none", STANDARD, {**_SMALL, "reduction": "none"}),
        Case("small_bad_reduction", STANDARD, {**_SMALL, "reduction": "max"}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_none_float_target", STANDARD, {"shape": (200, 96), "margin": 0.2, "reduction": "none",
                                                      "target_dtype": "float32", "mode": "standard"}),  # fmt: skip
    ],
    perf=[
        Case(f"N2^{e}", PERF, {"shape": (2**e, 256), "target_dtype": "float32", "mode": "uniform"})
        for e in (16, 18, 20)
    ],
    flops=_flops,
    bytes=_bytes,
    notes="fixed random cases seeded; invalid-reduction case added (exception type compared).",
)
