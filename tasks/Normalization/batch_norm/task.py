"""Normalization/batch_norm: per-channel batch normalization over dim 1, eval (running stats) or training
(batch stats, with the running statistics updated in place).

The entry returns only the normalized tensor, as upstream's does; in training mode it must also
update running_mean and running_var in place, so the task is marked inplace. kbx adds an eval
case with non-trivial running statistics (upstream's eval cases use mean 0 and variance 1).
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(
    input: torch.Tensor,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-05,
) -> torch.Tensor:
    return torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def make_inputs(params, gen, device) -> Call:
    shape = params["shape"]
    c = shape[1]
    x = rand_tensor(shape, params.get("dtype", "float32"), params["mode"], gen, device, outlier_scale=20.0)
    if params.get("stats") == "random":
        rm = rand_tensor((c,), "float32", "standard", gen, device)
        rv = rand_tensor((c,), "float32", "standard", gen, device).abs() + 1e-5
    else:
        rm = torch.zeros(c, dtype=torch.float32, device=device)
        rv = torch.ones(c, dtype=torch.float32, device=device)
    w = b = None
    if params.get("affine"):
        w = rand_tensor((c,), "float32", "standard", gen, device)
        b = rand_tensor((c,), "float32", "standard", gen, device)
    kwargs = {k: params[k] for k in ("training", "momentum", "eps") if k in params}
    return Call((x, rm, rv, w, b), kwargs)


def _flops(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    return 4.0 * input.numel()


def _bytes(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    return 2.0 * input.numel() * input.element_size()


def _case(name, kind, shape, mode="standard", **extra):
    return Case(name, kind, {"shape": shape, "mode": mode, **extra})


TASK = Task(
    entry="batch_norm",
    dtypes=("float32", "float16"),
    signature=(
        "batch_norm(input: torch.Tensor, running_mean: torch.Tensor | None, running_var: torch.Tensor | None, "
        "weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, training: bool = False, "
        "momentum: float = 0.1, eps: float = 1e-05) -> torch.Tensor"
    ),
    description=(
        "Batch-normalize `input` of shape (N, C, *) per channel c (dim 1): y = (x - mean_c) / sqrt(var_c + eps) "
        "* weight_c + bias_c, with weight/bias treated as 1/0 when None; return y with input's shape and dtype "
        "(input may be fp16 while the per-channel fp32 tensors stay fp32; compute in fp32). With training=False, "
        "mean_c/var_c are running_mean/running_var. With training=True they are the mean and biased variance of "
        "channel c over all other dims, and running_mean/running_var (when not None) are updated in place: "
        "running = (1 - momentum) * running + momentum * batch_stat, using the unbiased variance for running_var."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("eval_defaults", STANDARD, (2, 3, 4, 4)),
        _case("training", STANDARD, (2, 3, 4, 4), training=True),
        _case("eval_affine", STANDARD, (2, 3, 4, 4), affine=True),
        _case("eval_momentum_eps", STANDARD, (2, 3, 4, 4), momentum=0.2, eps=1e-3),
        _case("eval_random_stats", STANDARD, (4, 8, 16, 16), affine=True, stats="random"),
        _case("standard_training", STANDARD, (4, 8, 16, 16), affine=True, training=True),
        _case("outlier_training", OUTLIER, (4, 8, 16, 16), "outlier", affine=True, training=True),
    ],
    # upstream's perf: fp16 activations (32, 32, 128k, 128) with fp32 running stats and affine, eval mode
    perf=[
        _case(f"fp16_k{k}", PERF, (32, 32, 128 * k, 128), dtype="float16", affine=True, stats="random")
        for k in (5, 8, 12)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
)
