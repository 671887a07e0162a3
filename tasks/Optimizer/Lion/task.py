"""Optimizer/Lion: one in-place Lion step (sign of an interpolated momentum) on an fp32 parameter and its momentum.

Upstream's harness called `lion_step` (the file stem is Lion); kbx keeps that entry name. kbx adds
standard and outlier cases, one with exact zeros in the update (sign 0), and perf tensors of
2^24..2^27 elements with a non-zero momentum.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, lr: float = 1e-4, beta1: float = 0.9,
              beta2: float = 0.99, weight_decay: float = 0.0):  # fmt: skip
    update = exp_avg * beta1 + grad * (1.0 - beta1)
    if weight_decay != 0:
        param.mul_(1.0 - lr * weight_decay)
    param.add_(torch.sign(update), alpha=-lr)
    exp_avg.mul_(beta2).add_(grad, alpha=1.0 - beta2)
    return param, exp_avg


def make_inputs(params, gen, device) -> Call:
    shape, mode = params["shape"], params["mode"]
    p = rand_tensor(shape, "float32", mode, gen, device)
    g = rand_tensor(shape, "float32", mode, gen, device)
    if params.get("state", "zeros") == "zeros":
        m = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
    else:
        m = rand_tensor(shape, "float32", "standard", gen, device) * 0.1
    if params.get("zero_grads"):  # some exact zeros in both grad and momentum: update 0, sign 0
        g[::3] = 0.0
        m[::3] = 0.0
    kwargs = {k: params[k] for k in ("lr", "beta1", "beta2", "weight_decay") if k in params}
    return Call((p, g, m), kwargs)


def _flops(param, grad, exp_avg, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0):
    return 6.0 * param.numel()


def _bytes(param, grad, exp_avg, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0):
    return 5.0 * param.numel() * param.element_size()  # param and m read and written; grad read


TASK = Task(
    entry="lion_step",
    dtypes=("float32",),
    signature=(
        "lion_step(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, lr: float = 1e-4, "
        "beta1: float = 0.9, beta2: float = 0.99, weight_decay: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "One Lion optimizer step, in place, on fp32 tensors of equal shape: update = beta1 * exp_avg + "
        "(1 - beta1) * grad (using the old exp_avg); if weight_decay != 0, param *= 1 - lr * weight_decay; "
        "param -= lr * sign(update) (sign(0) = 0); then exp_avg = beta2 * exp_avg + (1 - beta2) * grad. "
        "Return (param, exp_avg), the same tensors, updated."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("zero_state", STANDARD, {"shape": (128,), "mode": "standard", "lr": 1e-3, "beta1": 0.9, "beta2": 0.99}),
        Case("weight_decay", STANDARD, {"shape": (256,), "mode": "standard", "lr": 1e-4, "beta1": 0.95,
                                        "beta2": 0.98, "weight_decay": 0.1}),  # fmt: skip
        Case("random_state", STANDARD, {"shape": (64,), "mode": "standard", "state": "random", "lr": 5e-4}),
        Case("zero_updates", STANDARD, {"shape": (300,), "mode": "standard", "state": "random", "zero_grads": True}),
        Case("standard", STANDARD, {"shape": (64, 130), "mode": "standard", "state": "random", "lr": 3e-4,
                                    "weight_decay": 0.01}),  # fmt: skip
        Case("outlier", OUTLIER, {"shape": (64, 130), "mode": "outlier", "state": "random", "weight_decay": 0.1}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard", "state": "random"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="entry lion_step (upstream harness name); adds standard/outlier and sign-0 cases; perf 2^24..2^27",
)
