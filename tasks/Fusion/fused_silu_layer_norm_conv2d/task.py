"""Fusion/fused_silu_layer_norm_conv2d: conv2d, then a per-sample layer norm over (C, H, W) without affine
parameters, then SiLU. The `weight` argument is accepted and ignored, as upstream's was.

kbx departure: the fp32 comparison allows TF32-level error (matmul_tolerance), since torch's own
cuDNN convolution uses TF32 by default and upstream's 1e-5 demanded cuDNN-identical numerics.
Upstream's fixed cases drew their inputs with torch.randn; here they are seeded draws of the same shapes.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(x, weight, conv_weight, conv_bias=None, conv_stride=1, conv_padding=0, conv_dilation=1,
              conv_groups=1, ln_eps=1e-05):  # fmt: skip
    y = F.conv2d(x, conv_weight, conv_bias, conv_stride, conv_padding, conv_dilation, conv_groups)
    y = F.layer_norm(y, y.shape[1:], eps=ln_eps)
    return F.silu(y)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    cw = rand_tensor(params["w"], "float32", mode, gen, device)
    cout = params["w"][0]
    cb = rand_tensor((cout,), "float32", mode, gen, device) if params.get("bias") else None
    lw = rand_tensor((cout,), "float32", "standard", gen, device) if params.get("ln_weight") else None
    keys = ("conv_stride", "conv_padding", "conv_dilation", "conv_groups", "ln_eps")
    return Call((x, lw, cw, cb), {k: params[k] for k in keys if k in params})


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _out_numel(x, w, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    kh, kw = w.shape[-2:]
    oh = (x.shape[-2] + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[-1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return x.shape[0] * w.shape[0] * oh * ow


def _flops(x, weight, conv_weight, conv_bias=None, conv_stride=1, conv_padding=0, conv_dilation=1,
           conv_groups=1, ln_eps=1e-05):  # fmt: skip
    out = _out_numel(x, conv_weight, conv_stride, conv_padding, conv_dilation)
    return float(2 * conv_weight[0].numel() * out + 6 * out)


def _bytes(x, weight, conv_weight, conv_bias=None, conv_stride=1, conv_padding=0, conv_dilation=1,
           conv_groups=1, ln_eps=1e-05):  # fmt: skip
    nb = conv_bias.numel() if conv_bias is not None else 0
    out = _out_numel(x, conv_weight, conv_stride, conv_padding, conv_dilation)
    return float((x.numel() + conv_weight.numel() + nb + out) * x.element_size())


_SMALL = {"x": (1, 3, 5, 5), "w": (6, 3, 3, 3), "mode": "standard"}
_RAND = {"x": (2, 3, 32, 32), "w": (8, 3, 3, 3), "bias": True, "conv_padding": 1}

TASK = Task(
    entry="fused_silu_layer_norm_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_silu_layer_norm_conv2d(x: torch.Tensor, weight: torch.Tensor | None, conv_weight: torch.Tensor, "
        "conv_bias: torch.Tensor | None = None, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1, "
        "ln_eps: float = 1e-05) -> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(x, conv_weight, conv_bias, conv_stride, conv_padding, conv_dilation, conv_groups) for "
        "NCHW fp32 x (cross-correlation, zero padding). Layer-normalize each sample over all of its (C, H, W) "
        "values with no affine parameters: (y - mean) / sqrt(biased variance + ln_eps). Return SiLU of that, "
        "v * sigmoid(v), as a new fp32 tensor of y's shape. `weight` is accepted and ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_bias", STANDARD, {**_SMALL, "bias": True}),
        Case("small_s2p1", STANDARD, {**_SMALL, "conv_stride": 2, "conv_padding": 1}),
        Case("small_dil2", STANDARD, {**_SMALL, "conv_dilation": 2}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard", "ln_weight": True}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
    ],
    perf=[
        Case(f"i{i}", PERF, {"x": (2 ** (i - 5), 2 ** (i - 2), 2**i, 2**i), "w": (64, 2 ** (i - 2), 3, 3),
                             "bias": True, "ln_weight": True, "mode": "uniform"})  # fmt: skip
        for i in (7, 8, 9)
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # tolerance widened: TF32 tail of the outlier case
    # TF32 over 400 outlier seeds (kbx.quality audit --tail): worst 1.8x the 1x allowance; x4 leaves 2x headroom
    tolerance=matmul_tolerance(4),
    notes="TF32-level tolerance for the convolution; fixed randn cases seeded.",
)
