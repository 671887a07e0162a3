"""Fusion/fused_sigmoid_batch_norm: sigmoid(batch_norm(input, ...)) for (N, C) or (N, C, L) fp32 input.

In training mode the running statistics are updated in place, so the task is marked inplace and the
running_mean / running_var tensors are judged after the call. kbx departure: upstream's last fixed
case reused the statistics mutated by an earlier case; kbx gives it its own seeded statistics.
Upstream's fixed randn input is a seeded draw of the same shape.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    return torch.sigmoid(F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps))


def make_inputs(params, gen, device) -> Call:
    shape = params["shape"]
    c = shape[1]
    x = rand_tensor(shape, "float32", params["mode"], gen, device)
    if params.get("stats") == "random":
        rm = rand_tensor((c,), "float32", "standard", gen, device)
        rv = rand_tensor((c,), "float32", "standard", gen, device).abs() + 1e-5
    else:
        rm = torch.zeros(c, dtype=torch.float32, device=device)
        rv = torch.ones(c, dtype=torch.float32, device=device)
    w = b = None
    if params.get("affine") == "random":
        w = rand_tensor((c,), "float32", "standard", gen, device)
        b = rand_tensor((c,), "float32", "standard", gen, device)
    elif params.get("affine") == "fixed":
        w = torch.full((c,), 0.5, dtype=torch.float32, device=device)
        b = torch.full((c,), 0.1, dtype=torch.float32, device=device)
    kwargs = {k: params[k] for k in ("training", "momentum", "eps") if k in params}
    return Call((x, rm, rv, w, b), kwargs)


def _flops(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    return 10.0 * input.numel()


def _bytes(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    return float((2 * input.numel() + 4 * input.shape[1]) * input.element_size())


_FIX = {"shape": (10, 5), "mode": "standard"}

TASK = Task(
    entry="fused_sigmoid_batch_norm",
    dtypes=("float32",),
    signature=(
        "fused_sigmoid_batch_norm(input: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor, "
        "weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, training: bool = False, "
        "momentum: float = 0.1, eps: float = 1e-05) -> torch.Tensor"
    ),
    description=(
        "Batch-normalize fp32 `input` of shape (N, C) or (N, C, L) per channel c (dim 1): v = (x - mean_c) / "
        "sqrt(var_c + eps) * weight_c + bias_c (weight/bias treated as 1/0 when None), and return sigmoid(v) as a "
        "new tensor of input's shape. With training=False mean_c/var_c are running_mean/running_var; with "
        "training=True they are the mean and biased variance of channel c over all other dims, and running_mean/"
        "running_var are updated in place: running = (1 - momentum) * running + momentum * batch_stat, using the "
        "unbiased variance for running_var."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_eval", STANDARD, dict(_FIX)),
        Case("fixed_eval_affine", STANDARD, {**_FIX, "affine": "fixed"}),
        Case("fixed_training", STANDARD, {**_FIX, "training": True}),
        Case("fixed_eval_momentum_eps", STANDARD, {**_FIX, "stats": "random", "momentum": 0.2, "eps": 1e-3}),
        Case("standard_eval", STANDARD, {"shape": (64, 128), "mode": "standard", "affine": "random"}),
        Case("standard_training", STANDARD, {"shape": (64, 128), "mode": "standard", "affine": "random",
                                             "training": True}),  # fmt: skip
        Case("standard_3d_training", STANDARD, {"shape": (8, 16, 32), "mode": "standard", "affine": "random",
                                                "training": True}),  # fmt: skip
        Case("outlier_eval", OUTLIER, {"shape": (64, 128), "mode": "outlier", "affine": "random", "stats": "random"}),
        Case("outlier_training", OUTLIER, {"shape": (64, 128), "mode": "outlier", "affine": "random",
                                           "training": True}),  # fmt: skip
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (32, 2**e // 32), "mode": "uniform", "stats": "random", "affine": "random"})
        for e in (24, 25, 26, 27)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="running stats judged after the call; the momentum/eps eval case has its own seeded statistics.",
)
