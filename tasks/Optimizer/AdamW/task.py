"""Optimizer/AdamW: one in-place AdamW step (decoupled weight decay) on an fp32 parameter and its moments.

Upstream's harness called `adamw_step` (the file stem is AdamW); kbx keeps that entry name. kbx adds
standard and outlier cases on larger tensors (upstream had only three (10, 5) cases) and perf
tensors of 2^24..2^27 elements with a non-zero optimizer state.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, step: int,
              lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
              weight_decay: float = 0.01):  # fmt: skip
    param.mul_(1.0 - lr * weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    bias1 = 1.0 - beta1**step
    bias2 = 1.0 - beta2**step
    denom = (exp_avg_sq.sqrt() / bias2**0.5).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / bias1)
    return param, exp_avg, exp_avg_sq


def make_inputs(params, gen, device) -> Call:
    shape, mode = params["shape"], params["mode"]
    p = rand_tensor(shape, "float32", mode, gen, device)
    g = rand_tensor(shape, "float32", mode, gen, device)
    if params.get("state", "zeros") == "zeros":
        m = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
        v = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
    else:  # a state after some steps: m = 0.1 * randn, v = 0.01 * |randn|
        m = rand_tensor(shape, "float32", "standard", gen, device) * 0.1
        v = rand_tensor(shape, "float32", "standard", gen, device).abs() * 0.01
    kwargs = {k: params[k] for k in ("lr", "beta1", "beta2", "eps", "weight_decay") if k in params}
    return Call((p, g, m, v, params["step"]), kwargs)


def _flops(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
    return 10.0 * param.numel()


def _bytes(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
    return 7.0 * param.numel() * param.element_size()  # param, m, v read and written; grad read


TASK = Task(
    entry="adamw_step",
    dtypes=("float32",),
    signature=(
        "adamw_step(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, "
        "step: int, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8, "
        "weight_decay: float = 0.01) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]"
    ),
    description=(
        "One AdamW step, in place, on fp32 tensors of equal shape (`step` is the 1-based step count): "
        "param *= 1 - lr * weight_decay; exp_avg = beta1 * exp_avg + (1 - beta1) * grad; "
        "exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2; then "
        "param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps). "
        "Return (param, exp_avg, exp_avg_sq), the same tensors, updated."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("first_step", STANDARD, {"shape": (10, 5), "mode": "standard", "step": 1}),
        Case("first_step_wd", STANDARD, {"shape": (10, 5), "mode": "standard", "step": 1, "weight_decay": 0.1}),
        Case("step100_state", STANDARD, {"shape": (10, 5), "mode": "standard", "step": 100, "state": "random"}),
        Case("standard", STANDARD, {"shape": (64, 130), "mode": "standard", "step": 7, "state": "random",
                                    "lr": 3e-3, "beta1": 0.85, "beta2": 0.99, "eps": 1e-6}),  # fmt: skip
        Case("outlier", OUTLIER, {"shape": (64, 130), "mode": "outlier", "step": 20, "state": "random",
                                  "weight_decay": 0.05}),  # fmt: skip
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard", "step": 2, "state": "random"})
        for e in (24, 25, 26, 27)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="entry adamw_step (upstream harness name); adds standard/outlier cases; perf 2^24..2^27",
)
