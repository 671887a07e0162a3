"""Fusion/fused_relu_batch_norm_conv2d: conv2d, then batch_norm (eval or training), then ReLU, NCHW fp32.

In training mode the running statistics are updated in place, so the task is marked inplace and the
running_mean / running_var tensors are judged after the call. kbx departures: the fp32 comparison
allows TF32-level error (matmul_tolerance), since torch's cuDNN convolution uses TF32 by default;
upstream's second fixed case reused the running statistics mutated by its first, and kbx instead
gives that eval case its own non-trivial seeded statistics; fixed randn inputs are seeded draws.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, running_mean=None,
              running_var=None, bn_weight=None, bn_bias=None, training=False, momentum=0.1, eps=1e-05,
              inplace=False):  # fmt: skip
    y = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    y = F.batch_norm(y, running_mean, running_var, bn_weight, bn_bias, training, momentum, eps)
    return F.relu(y, inplace=inplace)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    w = rand_tensor(params["w"], "float32", mode, gen, device)
    c = params["w"][0]
    b = rand_tensor((c,), "float32", mode, gen, device) if params.get("bias") else None
    if params.get("stats") == "random":
        rm = rand_tensor((c,), "float32", "standard", gen, device)
        rv = rand_tensor((c,), "float32", "standard", gen, device).abs() + 0.5
    else:
        rm = torch.zeros(c, dtype=torch.float32, device=device)
        rv = torch.ones(c, dtype=torch.float32, device=device)
    if params.get("affine") == "random":
        bw = rand_tensor((c,), "float32", "standard", gen, device)
        bb = rand_tensor((c,), "float32", "standard", gen, device)
    else:
        bw = torch.ones(c, dtype=torch.float32, device=device)
        bb = torch.zeros(c, dtype=torch.float32, device=device)
    keys = ("stride", "padding", "dilation", "groups", "training", "momentum", "eps")
    kwargs = {k: params[k] for k in keys if k in params}
    kwargs.update(running_mean=rm, running_var=rv, bn_weight=bw, bn_bias=bb)
    return Call((x, w, b), kwargs)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _out_numel(input, weight, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    kh, kw = weight.shape[-2:]
    oh = (input.shape[-2] + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (input.shape[-1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return input.shape[0] * weight.shape[0] * oh * ow


def _flops(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, running_mean=None,
           running_var=None, bn_weight=None, bn_bias=None, training=False, momentum=0.1, eps=1e-05,
           inplace=False):  # fmt: skip
    out = _out_numel(input, weight, stride, padding, dilation)
    return float(2 * weight[0].numel() * out + 6 * out)


def _bytes(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, running_mean=None,
           running_var=None, bn_weight=None, bn_bias=None, training=False, momentum=0.1, eps=1e-05,
           inplace=False):  # fmt: skip
    out = _out_numel(input, weight, stride, padding, dilation)
    small = (bias.numel() if bias is not None else 0) + 4 * weight.shape[0]
    return float((input.numel() + weight.numel() + small + out) * input.element_size())


_FIX = {"x": (4, 3, 32, 32), "w": (6, 3, 3, 3), "bias": True, "mode": "standard"}
_RAND = {"x": (2, 3, 32, 32), "w": (8, 3, 3, 3), "bias": True, "padding": 1, "affine": "random", "training": True}

TASK = Task(
    entry="fused_relu_batch_norm_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_relu_batch_norm_conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "stride=1, padding=0, dilation=1, groups=1, running_mean: torch.Tensor | None = None, "
        "running_var: torch.Tensor | None = None, bn_weight: torch.Tensor | None = None, "
        "bn_bias: torch.Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-05, "
        "inplace: bool = False) -> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(input, weight, bias, stride, padding, dilation, groups) (NCHW fp32, cross-correlation, "
        "zero padding). Batch-normalize y per output channel c: (y - mean_c) / sqrt(var_c + eps) * bn_weight_c + "
        "bn_bias_c. With training=False mean_c/var_c are running_mean/running_var; with training=True they are "
        "the mean and biased variance of channel c over (N, H, W), and running_mean/running_var are updated in "
        "place: running = (1 - momentum) * running + momentum * batch_stat, using the unbiased variance for "
        "running_var. Return ReLU of the result as a new fp32 tensor. `inplace` does not change the result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_training_p1", STANDARD, {**_FIX, "padding": 1, "training": True}),
        Case("fixed_eval_s2p1", STANDARD, {**_FIX, "stride": 2, "padding": 1, "stats": "random"}),
        Case("standard_training", STANDARD, {**_RAND, "mode": "standard"}),
        Case("standard_eval", STANDARD, {**_RAND, "mode": "standard", "training": False, "stats": "random"}),
        Case("outlier_training", OUTLIER, {**_RAND, "mode": "outlier", "momentum": 0.2}),
    ],
    perf=[
        Case(f"i{i}", PERF, {"x": (1, 64 * 2**i, 32 * 2**i, 32 * 2**i), "w": (128 * 2**i, 64 * 2**i, 3, 3),
                             "padding": 1, "mode": "uniform"})  # fmt: skip
        for i in (2, 3, 4)
    ],
    flops=_flops,
    bytes=_bytes,
    # x2: in eval mode each channel is scaled by 1 / sqrt(running_var + eps) of random statistics, so a
    # channel's TF32 error is not proportional to the output's rms. Over 400 seeds of standard_eval
    # (kbx.quality audit --tail --case standard_eval), one TF32 product against exact fp32 reaches 0.68 of
    # the x1 allowance (over half of it) and two TF32 products that round differently 1.90; an H100
    # failed 2 of 16,384 elements once (2026-11-27). At x2: 0.34 and 0.95.
    tolerance=matmul_tolerance(2),
    inplace=True,
    version=2,
    notes=(
        "TF32-level tolerance for the convolution; running stats judged after the call; the eval fixed case "
        "has its own seeded statistics instead of those mutated by the training case; fixed randn cases seeded."
    ),
)
