"""Fusion/fused_pixel_shuffle_conv2d: conv2d (NCHW fp32) followed by pixel_shuffle(upscale_factor).

kbx departure: the fp32 comparison allows TF32-level error (matmul_tolerance), since torch's own
cuDNN convolution uses TF32 by default and upstream's 1e-5 demanded cuDNN-identical numerics.
Upstream's fixed cases drew their inputs with torch.randn; here they are seeded draws of the same shapes.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, upscale_factor=2):
    return F.pixel_shuffle(F.conv2d(input, weight, bias, stride, padding, dilation, groups), upscale_factor)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    w = rand_tensor(params["w"], "float32", mode, gen, device)
    b = rand_tensor((params["w"][0],), "float32", mode, gen, device) if params.get("bias") else None
    keys = ("stride", "padding", "dilation", "groups", "upscale_factor")
    return Call((x, w, b), {k: params[k] for k in keys if k in params})


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _out_numel(input, weight, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    kh, kw = weight.shape[-2:]
    oh = (input.shape[-2] + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (input.shape[-1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return input.shape[0] * weight.shape[0] * oh * ow


def _flops(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, upscale_factor=2):
    return float(2 * weight[0].numel() * _out_numel(input, weight, stride, padding, dilation))


def _bytes(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, upscale_factor=2):
    nb = bias.numel() if bias is not None else 0
    out = _out_numel(input, weight, stride, padding, dilation)
    return float((input.numel() + weight.numel() + nb + out) * input.element_size())


_SMALL = {"x": (1, 4, 8, 8), "w": (16, 4, 3, 3), "mode": "standard"}
_RAND = {"x": (2, 3, 16, 16), "w": (32, 3, 3, 3), "bias": True, "padding": 1}

TASK = Task(
    entry="fused_pixel_shuffle_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_pixel_shuffle_conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "stride=1, padding=0, dilation=1, groups=1, upscale_factor: int = 2) -> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(input, weight, bias, stride, padding, dilation, groups) for NCHW fp32 input and "
        "(C_out, C_in/groups, kh, kw) weight (cross-correlation, zero padding), with C_out = C * r^2 for "
        "r = upscale_factor; then return the pixel shuffle of y, a new (N, C, H*r, W*r) fp32 tensor with "
        "out[n, c, h*r + i, w*r + j] = y[n, c*r*r + i*r + j, h, w]."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_bias", STANDARD, {**_SMALL, "bias": True}),
        Case("small_stride2", STANDARD, {**_SMALL, "x": (1, 4, 16, 16), "stride": 2}),
        Case("small_padding1", STANDARD, {**_SMALL, "padding": 1}),
        Case("small_r3", STANDARD, {"x": (1, 2, 8, 8), "w": (18, 2, 3, 3), "mode": "standard", "bias": True,
                                    "padding": 1, "upscale_factor": 3}, extra=True),  # fmt: skip
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
    ],
    perf=[
        Case(f"hw{h}", PERF, {"x": (16, 3, h, h), "w": (12, 3, 3, 3), "bias": True, "mode": "uniform"})
        for h in (512, 1024, 2048)
    ],
    flops=_flops,
    bytes=_bytes,
    version=3,  # v2: tolerance widened by the tolerance audit; v3: TF32 truncation
    # audit: outlier pixels put TF32 conv error at 2.3x the 1x allowance. Triton's tl.dot truncates to TF32:
    # over 1,000 outlier seeds the truncating model (kbx.quality audit --tail --tail-model truncating, 2026-11-28)
    # reached 1.09x the 5x allowance (2 seeds over 1); 11x leaves 2x headroom
    tolerance=matmul_tolerance(11.0),
    notes="TF32-level tolerance for the convolution; fixed randn cases seeded; adds an r=3 case.",
)
