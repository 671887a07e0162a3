"""Optimizer/RMSProp: one in-place RMSProp step (no momentum, not centered) on fp32 tensors.

The harness entry is rmsprop_step (the stem is RMSProp). kbx judges the updated parameter and
square_avg buffer (inplace task), and adds standard and outlier cases with random state; upstream
had only three fixed configurations.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(
    param: torch.Tensor,
    grad: torch.Tensor,
    square_avg: torch.Tensor,
    lr: float = 1e-2,
    alpha: float = 0.99,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
):
    g = grad if weight_decay == 0 else grad.add(param, alpha=weight_decay)
    square_avg.mul_(alpha).addcmul_(g, g, value=1.0 - alpha)
    param.addcdiv_(g, square_avg.sqrt().add_(eps), value=-lr)
    return param, square_avg


def make_inputs(params, gen, device) -> Call:
    shape, mode = params["shape"], params["mode"]
    p = rand_tensor(shape, "float32", mode, gen, device)
    g = rand_tensor(shape, "float32", mode, gen, device)
    state = params.get("state", "zeros")
    if state == "zeros":
        s = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
    else:
        s = rand_tensor(shape, "float32", "uniform", gen, device) * params.get("state_scale", 0.01)
    kwargs = {k: params[k] for k in ("lr", "alpha", "eps", "weight_decay") if k in params}
    return Call((p, g, s), kwargs)


def _flops(param, grad, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
    return 7.0 * param.numel()


def _bytes(param, grad, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
    # param and square_avg read and written, grad read
    return 5.0 * param.numel() * param.element_size()


TASK = Task(
    entry="rmsprop_step",
    dtypes=("float32",),
    signature=(
        "rmsprop_step(param: torch.Tensor, grad: torch.Tensor, square_avg: torch.Tensor, lr: float = 1e-2, "
        "alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "Apply one RMSProp step in place to fp32 tensors of equal shape (no momentum, not centered). With "
        "g = grad + weight_decay * param: square_avg = alpha * square_avg + (1 - alpha) * g * g, then "
        "param -= lr * g / (sqrt(square_avg) + eps). Update param and square_avg in place (grad is left "
        "unchanged) and return (param, square_avg)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("zero_state_defaults", STANDARD, {"shape": (128,), "mode": "standard"}),
        Case("zero_state_wd", STANDARD, {"shape": (256,), "mode": "standard", "lr": 1e-3, "alpha": 0.95,
                                         "eps": 1e-6, "weight_decay": 0.1}),  # fmt: skip
        Case("small_state", STANDARD, {"shape": (64,), "mode": "standard", "state": "random", "lr": 5e-3,
                                       "alpha": 0.9}),  # fmt: skip
        Case("standard", STANDARD, {"shape": (33, 65), "mode": "standard", "state": "random", "state_scale": 1.0,
                                    "weight_decay": 0.01}),  # fmt: skip
        Case("outlier", OUTLIER, {"shape": (33, 65), "mode": "outlier", "state": "random", "state_scale": 1.0,
                                  "lr": 1e-3, "alpha": 0.9}),  # fmt: skip
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (24, 26, 28)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="judged on the param and square_avg update; kbx adds random-state standard and outlier cases",
)
