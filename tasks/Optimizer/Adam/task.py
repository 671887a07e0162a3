"""Optimizer/Adam: one in-place Adam step on an fp32 parameter and its two moment buffers.

kbx departure: upstream's `Adam` only constructed torch.optim.Adam and compared its `.defaults`
dict, so no kernel was ever tested (and the key set changed with the torch version). kbx's `Adam`
performs one Adam update (torch.optim.Adam's single-tensor rule, amsgrad off, not maximizing) and is
judged on the updated parameter, exp_avg and exp_avg_sq, not on optimizer defaults.
"""

import math

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(
    param: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    step: int = 1,
    lr: float = 0.001,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-08,
    weight_decay: float = 0.0,
):
    beta1, beta2 = betas
    g = grad if weight_decay == 0 else grad.add(param, alpha=weight_decay)
    exp_avg.mul_(beta1).add_(g, alpha=1.0 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
    bias1 = 1.0 - beta1**step
    bias2 = 1.0 - beta2**step
    denom = (exp_avg_sq.sqrt() / math.sqrt(bias2)).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / bias1)
    return param, exp_avg, exp_avg_sq


def make_inputs(params, gen, device) -> Call:
    shape, mode = params["shape"], params["mode"]
    p = rand_tensor(shape, "float32", mode, gen, device)
    g = rand_tensor(shape, "float32", mode, gen, device)
    if params.get("state", "zeros") == "zeros":
        m = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
        v = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
    else:  # a state after some steps: m of gradient scale, v non-negative
        m = rand_tensor(shape, "float32", "standard", gen, device) * 0.1
        v = rand_tensor(shape, "float32", "uniform", gen, device) * 0.01
    kwargs = {k: params[k] for k in ("step", "lr", "betas", "eps", "weight_decay") if k in params}
    return Call((p, g, m, v), kwargs)


def _flops(param, grad, exp_avg, exp_avg_sq, step=1, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0):
    return 10.0 * param.numel()


def _bytes(param, grad, exp_avg, exp_avg_sq, step=1, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0):
    # param, exp_avg, exp_avg_sq read and written; grad read
    return 7.0 * param.numel() * param.element_size()


TASK = Task(
    entry="Adam",
    dtypes=("float32",),
    signature=(
        "Adam(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, "
        "step: int = 1, lr: float = 0.001, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-08, "
        "weight_decay: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]"
    ),
    description=(
        "Apply one Adam optimizer step in place to fp32 tensors of equal shape, as torch.optim.Adam does "
        "(no amsgrad); `step` is the 1-based count of this step. With g = grad + weight_decay * param: "
        "exp_avg = beta1 * exp_avg + (1 - beta1) * g; exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g; "
        "param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps). "
        "Update param, exp_avg and exp_avg_sq in place and return (param, exp_avg, exp_avg_sq)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("first_step_defaults", STANDARD, {"shape": (2, 2), "mode": "standard"}),
        Case("first_step_lr", STANDARD, {"shape": (300,), "mode": "standard", "lr": 0.01}),
        Case("betas", STANDARD, {"shape": (17, 33), "mode": "standard", "state": "random", "step": 5,
                                 "betas": (0.85, 0.95)}),  # fmt: skip
        Case("weight_decay", STANDARD, {"shape": (1000,), "mode": "standard", "state": "random", "step": 10,
                                        "weight_decay": 0.01}),  # fmt: skip
        Case("standard", STANDARD, {"shape": (64, 128), "mode": "standard", "state": "random", "step": 3,
                                    "lr": 0.005, "eps": 1e-6, "weight_decay": 0.1}),  # fmt: skip
        Case("outlier", OUTLIER, {"shape": (64, 128), "mode": "outlier", "state": "random", "step": 100,
                                  "weight_decay": 0.01}),  # fmt: skip
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "state": "random", "step": 2})
        for e in (24, 25, 26, 27)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes=(
        "entry performs one Adam step and is judged on the parameter and optimizer-state update "
        "(upstream compared only torch.optim.Adam(...).defaults)"
    ),
)
