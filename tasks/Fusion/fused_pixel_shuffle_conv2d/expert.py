"""Expert kernel for Fusion/fused_pixel_shuffle_conv2d: an implicit-GEMM convolution whose epilogue adds the bias and
stores each result straight to its pixel-shuffled position (no intermediate conv output).

The convolution tile is kbx/experts/conv_direct.py's (BP consecutive output pixels of a row by BC output channels,
tl.dot per kernel tap and block of input channels, fp32 accumulation, straight from the NCHW input).

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 1.02 / 4.07 / 16.3 ms at hw = 512
/ 1024 / 2048 against eager's 0.823 / 3.42 / 13.65 ms (cuDNN's convolution, then pixel_shuffle), 0.83x (0.63x with
tiles flattened over the image, before kbx/experts/conv_direct.py's row tiles).
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv_shape
from kbx.experts.conv_direct import BC, BCI, conv_tile, grid


@triton.jit
def _conv_pixel_shuffle_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_in, H, W, C_out, OH, OW, cin_g, cout_g, groups,
                               sh, sw, ph, pw, dh, dw,
                               R: tl.constexpr, HAS_BIAS: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
        BP: tl.constexpr, BC: tl.constexpr, BCI: tl.constexpr):  # fmt: skip
    acc, n, oh, ow, pm, co, cm = conv_tile(x_ptr, w_ptr, b_ptr, C_in, H, W, OW, cin_g, cout_g, groups, sh, sw, ph, pw,
                                           dh, dw, HAS_BIAS, KH, KW, BP, BC, BCI)  # fmt: skip
    # out[n, c, oh*R + i, ow*R + j] = conv[n, c*R*R + i*R + j, oh, ow]
    c = co // (R * R)
    i = (co // R) % R
    j = co % R
    row = oh[:, None] * R + i[None, :]  # output row, then output column
    dst = ((n * (C_out // (R * R)) + c[None, :]) * (OH * R) + row) * (OW * R) + ow[:, None] * R + j[None, :]
    tl.store(y_ptr + dst, acc.to(y_ptr.dtype.element_ty), mask=pm[:, None] & cm[None, :])

def fused_pixel_shuffle_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, upscale_factor=2):
    x = input.contiguous()
    w = weight.contiguous()
    N, C_in, H, W, C_out, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, OH, OW = conv_shape(
        x, w, stride, padding, dilation, groups, "fused_pixel_shuffle_conv2d")
    r = int(upscale_factor)
    if C_out % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's channel dimension to be divisible by {r * r}")
    y = torch.empty((N, C_out // (r * r), OH * r, OW * r), dtype=x.dtype, device=x.device)
    if y.numel():
        tiles, bp = grid(x, OH, OW, cout_g, groups)
        _conv_pixel_shuffle_kernel[tiles](
            x, w, bias if bias is not None else w, y, C_in, H, W, C_out, OH, OW, cin_g, cout_g, groups,
            sh, sw, ph, pw, dh, dw, R=r, HAS_BIAS=bias is not None, KH=KH, KW=KW, BP=bp, BC=BC, BCI=BCI,
            num_warps=4,
        )
    return y
