"""Expert kernels for Fusion/fused_relu_batch_norm_conv2d.

1. The implicit-GEMM convolution of kbx/experts/conv.py (an NHWC copy of the input, tl.dot per kernel tap, fp32
   accumulation) with the bias.
2. In training, kbx/experts/batch_norm.py's statistics: each program takes a block of channels and computes
   their batch mean and biased variance over (N, H, W) in two chunked passes, and updates the running
   statistics in place.
3. One elementwise pass normalizes with the chosen statistics, applies the affine map and ReLU.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.234 / 2.63 / 40.8 ms at i = 2 /
3 / 4 against eager's 0.202 / 1.95 / 28.1 ms (cuDNN's TF32 convolution, then batch_norm and relu), 0.76x; its own
NCHW convolution kernel gave 0.18x.
"""

import torch

from kbx.experts.batch_norm import RELU, batch_statistics, normalize
from kbx.experts.conv import conv2d, conv_shape

BLOCK = 4096


def fused_relu_batch_norm_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                                 running_mean=None, running_var=None, bn_weight=None, bn_bias=None, training=False,
                                 momentum=0.1, eps=1e-05, inplace=False):  # fmt: skip
    shape = conv_shape(input, weight, stride, padding, dilation, groups, "fused_relu_batch_norm_conv2d")
    N, C_out, L = shape.N, shape.Cout, shape.Hout * shape.Wout
    if N * C_out == 0:
        return torch.empty((N, C_out, shape.Hout, shape.Wout), dtype=input.dtype, device=input.device)
    y = conv2d(input, weight, bias, stride, padding, dilation, groups)
    if training:
        mean, var = batch_statistics(y, N, C_out, L, running_mean, running_var, momentum)
    else:
        mean, var = running_mean, running_var
    normalize(y, mean, var, bn_weight, bn_bias, y, C_out, L, eps, RELU, BLOCK, num_warps=4)
    return y
