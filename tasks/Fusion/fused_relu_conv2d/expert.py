"""Expert kernel for Fusion/fused_relu_conv2d: an implicit-GEMM convolution with the bias add and ReLU fused.

The convolution tile is kbx/experts/conv_direct.py's (BP consecutive output pixels of a row by BC output channels,
tl.dot per kernel tap and block of input channels, fp32 accumulation, straight from the NCHW input); the
epilogue applies ReLU and stores the tile.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.490 / 1.94 / 7.73 ms at hw =
1024 / 2048 / 4096 against eager's 0.351 / 1.36 / 5.36 ms (cuDNN's convolution, then ReLU), 0.70x. The output alone
(64 x 4096^2 fp32, 4.3 GB at hw4096) moves at 555 GB/s, 13 % of the copy bandwidth, so the tiles bound it, not the
memory: with 3 input channels each tap's tl.dot has 3 of its 16 reduction lanes in use. A plain FMA kernel (27
multiply-adds per output, no tl.dot) would be the next thing to measure.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv_shape
from kbx.experts.conv_direct import BC, BCI, conv_tile, grid


@triton.jit
def _conv_relu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_in, H, W, C_out, OH, OW, cin_g, cout_g, groups,
                      sh, sw, ph, pw, dh, dw,
                      HAS_BIAS: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
        BP: tl.constexpr, BC: tl.constexpr, BCI: tl.constexpr):  # fmt: skip
    acc, n, oh, ow, pm, co, cm = conv_tile(x_ptr, w_ptr, b_ptr, C_in, H, W, OW, cin_g, cout_g, groups, sh, sw, ph, pw,
                                           dh, dw, HAS_BIAS, KH, KW, BP, BC, BCI)  # fmt: skip
    acc = tl.maximum(acc, 0.0)
    dst = ((n * C_out + co[None, :]) * OH + oh[:, None]) * OW + ow[:, None]
    tl.store(y_ptr + dst, acc.to(y_ptr.dtype.element_ty), mask=pm[:, None] & cm[None, :])

def fused_relu_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, inplace=False):
    x = input.contiguous()
    w = weight.contiguous()
    N, C_in, H, W, C_out, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, OH, OW = conv_shape(
        x, w, stride, padding, dilation, groups, "fused_relu_conv2d")
    y = torch.empty((N, C_out, OH, OW), dtype=x.dtype, device=x.device)
    if y.numel():
        tiles, bp = grid(x, OH, OW, cout_g, groups)
        _conv_relu_kernel[tiles](
            x, w, bias if bias is not None else w, y, C_in, H, W, C_out, OH, OW, cin_g, cout_g, groups,
            sh, sw, ph, pw, dh, dw, HAS_BIAS=bias is not None, KH=KH, KW=KW, BP=bp, BC=BC, BCI=BCI,
            num_warps=4,
        )
    return y
