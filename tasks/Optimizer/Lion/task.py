"""Optimizer/Lion: one in-place Lion step (sign of an interpolated momentum) on an fp32 parameter and its momentum.

Upstream's harness called `lion_step` (the file stem is Lion); kbx keeps that entry name. kbx adds
standard and outlier cases, one with exact zeros in the update (sign 0), and perf tensors of
2^24..2^27 elements with a non-zero momentum.

The update's sign is discontinuous at zero: where beta1 * exp_avg + (1 - beta1) * grad is within
fp32 rounding of zero, a kernel that fuses the multiply-add (an FMA, as Triton does by default)
may honestly get the other sign than eager PyTorch's two roundings. `sign_within_rounding`
accepts either sign (or zero) there and judges every other element as usual; on 2^24 random
elements that is a handful of elements, so no cheat hides in it.
"""

import torch

from kbx.tasks import FP32_EPS, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, lr: float = 1e-4, beta1: float = 0.9,
              beta2: float = 0.99, weight_decay: float = 0.0):  # fmt: skip
    update = exp_avg * beta1 + grad * (1.0 - beta1)
    if weight_decay != 0:
        param.mul_(1.0 - lr * weight_decay)
    param.add_(torch.sign(update), alpha=-lr)
    exp_avg.mul_(beta2).add_(grad, alpha=1.0 - beta2)
    return param, exp_avg


SIGN_TIE_EPS = 4  # |update| within this many fp32 epsilons of its terms' magnitude: either sign is right
ATOL, RTOL = 1e-5, 1e-5  # kbx's default fp32 tolerance


def sign_within_rounding(call: Call, got) -> str:
    """'' when the returned and updated tensors match the reference, allowing either sign of the
    update where it is within rounding of zero."""
    param, grad, exp_avg = (t.detach() for t in call.args)
    kw = {"lr": 1e-4, "beta1": 0.9, "weight_decay": 0.0, **call.kwargs}
    lr, beta1, wd = kw["lr"], kw["beta1"], kw["weight_decay"]
    (ret_p, ret_m), (new_p, new_g, new_m) = got
    ref_p, ref_m = reference(param.clone(), grad, exp_avg.clone(), **call.kwargs)
    a, b = exp_avg.double() * beta1, grad.double() * (1.0 - beta1)
    tie = (a + b).abs() <= SIGN_TIE_EPS * FP32_EPS * (a.abs() + b.abs())
    decayed = param * (1.0 - lr * wd) if wd != 0 else param
    allowed = [decayed - lr * s for s in (-1.0, 0.0, 1.0)]
    for name, value in (("returned param", ret_p), ("param", new_p)):
        close = torch.isclose(value, ref_p, rtol=RTOL, atol=ATOL)
        either = torch.zeros_like(close)
        for candidate in allowed:
            either |= torch.isclose(value, candidate, rtol=RTOL, atol=ATOL)
        bad = ~torch.where(tie, either, close)
        if bool(bad.any()):
            return f"{name}: {int(bad.sum())} of {bad.numel()} elements differ from the reference step"
    for name, value, expected in (("returned exp_avg", ret_m, ref_m), ("exp_avg", new_m, ref_m), ("grad", new_g, grad)):
        if not bool(torch.isclose(value, expected, rtol=RTOL, atol=ATOL).all()):
            return f"{name} differs from the reference step"
    return ""


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
    stochastic=sign_within_rounding,
    version=2,
    notes="entry lion_step (upstream harness name); adds standard/outlier and sign-0 cases; perf 2^24..2^27",
)
