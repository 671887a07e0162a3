"""Fusion/fused_relu_max_pool2d_conv2d: conv2d, then max_pool2d, then ReLU (NCHW fp32).

kbx departure: the fp32 comparison allows TF32-level error (matmul_tolerance), since torch's own
cuDNN convolution uses TF32 by default and upstream's 1e-5 demanded cuDNN-identical numerics.
Upstream's fixed cases drew their inputs with torch.randn; here they are seeded draws of the same shapes.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor


def reference(
    input, weight, bias=None, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
    pool_kernel_size=2, pool_stride=None, pool_padding=0, pool_dilation=1, pool_ceil_mode=False, inplace=False,
) -> torch.Tensor:  # fmt: skip
    y = F.conv2d(input, weight, bias, conv_stride, conv_padding, conv_dilation, conv_groups)
    y = F.max_pool2d(y, pool_kernel_size, pool_stride, pool_padding, pool_dilation, ceil_mode=pool_ceil_mode)
    return F.relu(y, inplace=inplace)


def make_inputs(params, gen, device) -> Call:
    mode = params["mode"]
    x = rand_tensor(params["x"], "float32", mode, gen, device)
    w = rand_tensor(params["w"], "float32", mode, gen, device)
    kwargs = {k: v for k, v in params.items() if k not in ("x", "w", "mode", "bias")}
    if params.get("bias"):
        kwargs["bias"] = rand_tensor((params["w"][0],), "float32", mode, gen, device)
    return Call((x, w), kwargs)


def _shapes(input, weight, conv_stride, conv_padding, conv_dilation, k, s, p, d, ceil):
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    cs, cp, cd = pair(conv_stride), pair(conv_padding), pair(conv_dilation)
    kh, kw = weight.shape[-2:]
    ch = (input.shape[-2] + 2 * cp[0] - cd[0] * (kh - 1) - 1) // cs[0] + 1
    cw = (input.shape[-1] + 2 * cp[1] - cd[1] * (kw - 1) - 1) // cs[1] + 1
    pk, pp, pd = pair(k), pair(p), pair(d)
    ps = pair(s) if s is not None else pk
    ph = (ch + 2 * pp[0] - pd[0] * (pk[0] - 1) - 1) // ps[0] + 1
    pw = (cw + 2 * pp[1] - pd[1] * (pk[1] - 1) - 1) // ps[1] + 1
    nco = input.shape[0] * weight.shape[0]
    return nco * ch * cw, nco * ph * pw


def _flops(input, weight, bias=None, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
           pool_kernel_size=2, pool_stride=None, pool_padding=0, pool_dilation=1, pool_ceil_mode=False,
           inplace=False):  # fmt: skip
    conv_out, pool_out = _shapes(input, weight, conv_stride, conv_padding, conv_dilation, pool_kernel_size,
                                 pool_stride, pool_padding, pool_dilation, pool_ceil_mode)  # fmt: skip
    macs = weight[0].numel()  # (C_in / groups) * kh * kw per output element
    return float(2 * macs * conv_out + conv_out + pool_out)


def _bytes(input, weight, bias=None, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
           pool_kernel_size=2, pool_stride=None, pool_padding=0, pool_dilation=1, pool_ceil_mode=False,
           inplace=False):  # fmt: skip
    _, pool_out = _shapes(input, weight, conv_stride, conv_padding, conv_dilation, pool_kernel_size,
                          pool_stride, pool_padding, pool_dilation, pool_ceil_mode)  # fmt: skip
    nb = bias.numel() if bias is not None else 0
    return float((input.numel() + weight.numel() + nb + pool_out) * input.element_size())


_SMALL = {"x": (1, 3, 8, 8), "w": (6, 3, 3, 3), "mode": "standard"}
_RAND = {"x": (2, 3, 64, 64), "w": (8, 3, 3, 3), "bias": True, "conv_padding": 1, "pool_kernel_size": 2,
         "pool_stride": 2}  # fmt: skip

TASK = Task(
    entry="fused_relu_max_pool2d_conv2d",
    dtypes=("float32",),
    signature=(
        "fused_relu_max_pool2d_conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, "
        "conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1, pool_kernel_size=2, pool_stride=None, "
        "pool_padding=0, pool_dilation=1, pool_ceil_mode: bool = False, inplace: bool = False) -> torch.Tensor"
    ),
    description=(
        "Compute y = conv2d(input, weight, bias, conv_stride, conv_padding, conv_dilation, conv_groups) for "
        "NCHW fp32 input and (C_out, C_in/groups, kh, kw) weight (cross-correlation, zero padding); then "
        "max_pool2d(y, pool_kernel_size, pool_stride (None means the kernel size), pool_padding (padded cells "
        "count as -inf), pool_dilation, ceil_mode=pool_ceil_mode); then ReLU. Return the pooled, rectified "
        "tensor. `inplace` only concerns the intermediate and does not change the result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, dict(_SMALL)),
        Case("small_bias", STANDARD, {**_SMALL, "bias": True}),
        Case("small_conv_s2p1", STANDARD, {**_SMALL, "conv_stride": 2, "conv_padding": 1}),
        Case("small_pool_k3s2p1", STANDARD, {**_SMALL, "pool_kernel_size": 3, "pool_stride": 2, "pool_padding": 1}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
    ],
    perf=[
        Case(f"hw2^{s}", PERF, {"x": (1, 3, 2**s + 2, 2**s + 2), "w": (64, 3, 3, 3), "bias": True, "mode": "uniform"})
        for s in (9, 10, 11, 12)
    ],
    flops=_flops,
    bytes=_bytes,
    version=3,  # tolerance widened: TF32 tail of the outlier case
    # audit: outlier inputs put TF32 conv error at 0.53x the 1x allowance; 2x for headroom
    # TF32 over 400 outlier seeds (kbx.quality audit --tail): worst 2.3x the 1x allowance; x5 leaves 2x headroom
    tolerance=matmul_tolerance(5),
    notes="TF32-level tolerance for the convolution; fixed randn cases seeded.",
)
