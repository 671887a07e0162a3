"""Optimizer/SGD: one in-place SGD step (weight decay, momentum with dampening, optional Nesterov).

Upstream's harness calls `sgd_step`, which upstream's own reference file does not define; kbx's
reference is `sgd_step` itself, and the outputs compared are the updated parameter and momentum
buffer (not optimizer defaults). kbx adds cases with momentum_buffer=None and with dampening.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(
    param: torch.Tensor,
    grad: torch.Tensor,
    momentum_buffer: torch.Tensor | None = None,
    lr: float = 0.1,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
):
    g = grad
    if weight_decay != 0:
        g = g.add(param, alpha=weight_decay)
    if momentum != 0:
        if momentum_buffer is None:
            momentum_buffer = torch.zeros_like(param)
        momentum_buffer.mul_(momentum).add_(g, alpha=1.0 - dampening)
        direction = g.add(momentum_buffer, alpha=momentum) if nesterov else momentum_buffer
    else:
        momentum_buffer = None
        direction = g
    param.add_(direction, alpha=-lr)
    return param, momentum_buffer


def make_inputs(params, gen, device) -> Call:
    shape = params["shape"]
    mode = params["mode"]
    p = rand_tensor(shape, "float32", mode, gen, device)
    g = rand_tensor(shape, "float32", mode, gen, device)
    buf = params.get("buffer", "none")
    if buf == "zeros":
        b = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
    elif buf == "random":
        b = rand_tensor(shape, "float32", "standard", gen, device)
    else:
        b = None
    kwargs = {k: params[k] for k in ("lr", "momentum", "weight_decay", "dampening", "nesterov") if k in params}
    return Call((p, g, b), kwargs)


def _flops(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0, dampening=0.0, nesterov=False):
    return 6.0 * param.numel()


def _bytes(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0, dampening=0.0, nesterov=False):
    # param read + write, grad read, and (with momentum) buffer read (unless created) + write
    n = param.numel() * param.element_size()
    if momentum == 0:
        return 3.0 * n
    return (4.0 if momentum_buffer is None else 5.0) * n


def _random(name, kind, mode, nesterov):
    return Case(name, kind, {
        "shape": (512,), "mode": mode, "buffer": "random", "lr": 0.05, "momentum": 0.9,
        "weight_decay": 0.01, "dampening": 0.0, "nesterov": nesterov,
    })


TASK = Task(
    entry="sgd_step",
    dtypes=("float32",),
    signature=(
        "sgd_step(param: torch.Tensor, grad: torch.Tensor, momentum_buffer: torch.Tensor | None = None, "
        "lr: float = 0.1, momentum: float = 0.9, weight_decay: float = 0.0, dampening: float = 0.0, "
        "nesterov: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]"
    ),
    description=(
        "Apply one SGD step in place to fp32 tensors. Let g = grad + weight_decay * param. If momentum != 0, "
        "update the buffer in place as buf = momentum * buf + (1 - dampening) * g (a zero buffer is created "
        "when momentum_buffer is None) and use d = g + momentum * buf if nesterov else d = buf; otherwise "
        "d = g and there is no buffer. Update param in place as param -= lr * d and return (param, buf), "
        "or (param, None) when momentum == 0."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("no_momentum", STANDARD, {"shape": (128,), "mode": "standard", "momentum": 0.0}),
        Case("zero_buffer_defaults", STANDARD, {"shape": (256,), "mode": "standard", "buffer": "zeros"}),
        Case("no_momentum_wd", STANDARD, {"shape": (128,), "mode": "standard", "momentum": 0.0, "weight_decay": 0.01}),
        Case("zero_buffer_nesterov", STANDARD,
             {"shape": (128,), "mode": "standard", "buffer": "zeros", "nesterov": True}),
        Case("none_buffer", STANDARD, {"shape": (300,), "mode": "standard", "lr": 0.01, "weight_decay": 0.1}),
        Case("dampening", STANDARD,
             {"shape": (2, 257), "mode": "standard", "buffer": "random", "dampening": 0.1, "weight_decay": 0.01}),
        _random("standard", STANDARD, "standard", False),
        _random("standard_nesterov", STANDARD, "standard", True),
        _random("outlier", OUTLIER, "outlier", False),
        _random("outlier_nesterov", OUTLIER, "outlier", True),
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard", "buffer": "zeros"}) for e in (24, 26, 28)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="reference defines the harness entry sgd_step (upstream's did not); param and buffer updates are compared",
)
