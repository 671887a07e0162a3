"""Expert kernel for Fusion/fused_leaky_relu_conv2d: an implicit-GEMM convolution with the bias add and leaky ReLU
fused.

The convolution tile is kbx/experts/conv_direct.py's (BP consecutive output pixels of a row by BC output channels,
tl.dot per kernel tap and block of input channels, fp32 accumulation, straight from the NCHW input); the
epilogue applies the leaky ReLU and stores the tile.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 1.13 / 4.52 / 18.1 ms at hw =
2048 / 4096 / 8192 against eager's 0.663 / 2.62 / 10.45 ms (cuDNN's convolution, then leaky_relu), 0.58x. With 3
input and 6 output channels a tile uses 3 of its 16 reduction lanes and 6 of its 32 output columns (3.5 % of the
tl.dot work is real), and the 1.6 GB output at hw8192 moves at 89 GB/s. A plain FMA kernel (27 multiply-adds per
output, no tl.dot) would be the next thing to measure.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv_shape
from kbx.experts.conv_direct import BC, BCI, conv_tile, grid


@triton.jit
def _conv_leaky_relu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_in, H, W, C_out, OH, OW, cin_g, cout_g, groups,
                            sh, sw, ph, pw, dh, dw, slope,
                            HAS_BIAS: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
        BP: tl.constexpr, BC: tl.constexpr, BCI: tl.constexpr):  # fmt: skip
    acc, n, oh, ow, pm, co, cm = conv_tile(x_ptr, w_ptr, b_ptr, C_in, H, W, OW, cin_g, cout_g, groups, sh, sw, ph, pw,
                                           dh, dw, HAS_BIAS, KH, KW, BP, BC, BCI)  # fmt: skip
    acc = tl.where(acc >= 0.0, acc, acc * slope)
    dst = ((n * C_out + co[None, :]) * OH + oh[:, None]) * OW + ow[:, None]
    tl.store(y_ptr + dst, acc.to(y_ptr.dtype.element_ty), mask=pm[:, None] & cm[None, :])

def fused_leaky_relu_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, negative_slope=0.01,
                            inplace=False):
    x = input.contiguous()
    w = weight.contiguous()
    N, C_in, H, W, C_out, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, OH, OW = conv_shape(
        x, w, stride, padding, dilation, groups, "fused_leaky_relu_conv2d")
    y = torch.empty((N, C_out, OH, OW), dtype=x.dtype, device=x.device)
    if y.numel():
        tiles, bp = grid(x, OH, OW, cout_g, groups)
        _conv_leaky_relu_kernel[tiles](
            x, w, bias if bias is not None else w, y, C_in, H, W, C_out, OH, OW, cin_g, cout_g, groups,
            sh, sw, ph, pw, dh, dw, float(negative_slope), HAS_BIAS=bias is not None, KH=KH, KW=KW, BP=bp, BC=BC,
            BCI=BCI, num_warps=4,
        )
    return y
