"""Direct (NCHW) implicit-GEMM 2-D convolution tiles in Triton, for few input channels: the pieces the expert
solutions of `Fusion/fused_relu_conv2d`, `fused_leaky_relu_conv2d` and `fused_pixel_shuffle_conv2d` share (each
expert's kernel calls `conv_tile` and adds its own epilogue and store).

A program owns BP consecutive output pixels of one output row of one image and BC output channels of one group;
for every kernel tap and block of BCI input channels it gathers the (pixels x in-channels) input tile straight
from the NCHW input and multiplies it with the (in-channels x out-channels) weight tile by tl.dot, accumulating
in fp32 (stride, padding, dilation and groups by index math). With 3 input channels an NHWC copy would cost
more than it saves. The pixels of a tile are consecutive within a row, so the output stores are contiguous
along them; tiles flattened over (N, OH, OW), as before, hid that behind a division. On an H200 (2026-11-29,
docs/BENCHMARKS.md) that moved fused_pixel_shuffle_conv2d from 0.63x to 0.83x eager (its shuffled stores gain
most) and fused_relu_conv2d from 0.69x to 0.71x. One tl.dot over (channel, kh, kw) together (27 of a 32-wide
step) instead of 9 taps of 16 channels was no faster (0.63x, 0.85x).
"""

import triton
import triton.language as tl

BP, BC, BCI = 128, 32, 16  # output pixels x output channels x input-channel step
CPU_BP = 1024  # the CPU interpreter runs fewer, larger tiles faster


def grid(x, OH, OW, cout_g, groups):
    """The launch grid of a kernel built on conv_tile: (row tiles, channel blocks, images x groups)."""
    bp = BP if x.is_cuda else CPU_BP
    return (OH * triton.cdiv(OW, bp), triton.cdiv(cout_g, BC), x.shape[0] * groups), bp


@triton.jit
def conv_tile(x_ptr, w_ptr, b_ptr, C_in, H, W, OW, cin_g, cout_g, groups, sh, sw, ph, pw, dh, dw,
              HAS_BIAS: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, BP: tl.constexpr, BC: tl.constexpr,
              BCI: tl.constexpr):  # fmt: skip
    """(acc, n, oh, ow, pixel mask, global output channel co, channel mask) of this program's tile, the bias added."""
    tiles_per_row = tl.cdiv(OW, BP)
    oh = tl.zeros([BP], dtype=tl.int64) + tl.program_id(0).to(tl.int64) // tiles_per_row  # a vector: the
    # interpreter rejects a mask combined from a scalar and a vector
    ow = (tl.program_id(0).to(tl.int64) % tiles_per_row) * BP + tl.arange(0, BP)
    n = tl.program_id(2).to(tl.int64) // groups
    g = tl.program_id(2).to(tl.int64) % groups
    pm = ow < OW
    co_g = tl.program_id(1).to(tl.int64) * BC + tl.arange(0, BC)
    cm = co_g < cout_g
    co = g * cout_g + co_g
    acc = tl.zeros((BP, BC), dtype=tl.float32)
    ci_offs = tl.arange(0, BCI)
    # One flat loop over (input-channel block, tap): the software pipeliner then buffers a single
    # (BP x BCI) + (BCI x BC) tile pair per stage. Unrolling the KH * KW taps inside a loop over
    # channel blocks made it buffer every tap's tiles: 9 * 3 stages * 10 KB = 270 KB for a 3x3
    # kernel, over the H100's 227 KB shared-memory limit.
    for t in range(0, tl.cdiv(cin_g, BCI) * (KH * KW)):
        ci = (t // (KH * KW)) * BCI + ci_offs
        kh = (t % (KH * KW)) // KW
        kw = t % KW
        cim = ci < cin_g
        ih = oh * sh - ph + kh * dh
        iw = ow * sw - pw + kw * dw
        m = pm & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_row = ((n * C_in + g * cin_g + ci[None, :]) * H + ih[:, None]) * W  # row ih of each input channel
        a = tl.load(x_ptr + x_row + iw[:, None], mask=m[:, None] & cim[None, :], other=0.0)
        b = tl.load(w_ptr + ((co[None, :] * cin_g + ci[:, None]) * KH + kh) * KW + kw,
                    mask=cim[:, None] & cm[None, :], other=0.0)  # fmt: skip
        acc += tl.dot(a, b)  # implicit GEMM step: (pixels x in-channels) @ (in-channels x out-channels)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=cm, other=0.0).to(tl.float32)[None, :]
    return acc, n, oh, ow, pm, co, cm
