"""Implicit-GEMM 2-D convolution over a channels-last copy of the input, in Triton: the kernel the expert solutions of
`Convolution/conv2d` and `Fusion/fused_relu_batch_norm_conv2d` share (each expert imports `conv2d`), and the shape
checks and NHWC copies every convolution expert's wrapper starts with (`conv_shape`, `nhwc_copies`).

The input is copied once to NHWC and the weights to (Cout, kH, kW, Cin/groups), so that the
reduction index k = (kh, kw, ci) runs along contiguous memory in both operands. Per group, each
program computes a (BLOCK_M output positions) x (BLOCK_N output channels) tile: for every filter
tap (kh, kw) it gathers the shifted input rows once and streams channel blocks through tl.dot with
fp32 accumulation (TF32 on GPU, matching the tasks' matmul tolerances). Zero padding is a load mask.
The output is NCHW, with the bias added.

One K loop over (tap, channel block) instead of a loop per tap was 1.3-4x slower on an H200
(2026-11-29, docs/BENCHMARKS.md), as were 128x128 and smaller tiles.
"""

from typing import NamedTuple

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 32  # best of small sweeps on an H200 (triton 3.6), the last on 2026-11-29
NUM_WARPS, NUM_STAGES = 8, 3


@triton.jit
def nhwc_conv_tile(x_ptr, w_ptr, img, g, ih0, iw0, rows_ok, co, co_ok, Cin, H, W, cin_g, cout_g, dh, dw,
                   KH: tl.constexpr, KW: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):  # fmt: skip
    """The (BLOCK_M output pixels x BLOCK_N output channels) tile of group g, fp32 accumulation: for every filter
    tap the shifted NHWC input rows (pixel i of image img[i] reads row ih0[i] + kh * dh, column iw0[i] + kw * dw;
    zero padding is the load mask) stream their channel blocks through tl.dot with the tap's filter slice."""
    ck = tl.arange(0, BLOCK_K)
    k_total = KH * KW * cin_g
    w_rows = w_ptr + (g * cout_g + co) * k_total  # (BLOCK_N,) start of each filter
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kh in tl.static_range(KH):
        for kw in tl.static_range(KW):
            ih = ih0 + kh * dh
            iw = iw0 + kw * dw
            row_ok = rows_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x_rows = x_ptr + ((img * H + ih) * W + iw) * Cin + g * cin_g  # (BLOCK_M,) NHWC pixel starts
            w_tap = w_rows + (kh * KW + kw) * cin_g
            for c0 in range(0, cin_g, BLOCK_K):
                c = c0 + ck
                c_ok = c < cin_g
                a = tl.load(x_rows[:, None] + c[None, :], mask=row_ok[:, None] & c_ok[None, :], other=0.0)
                b = tl.load(w_tap[None, :] + c[:, None], mask=c_ok[:, None] & co_ok[None, :], other=0.0)
                acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
    return acc


# Spatial sizes and strides stay runtime values (specialising them would compile a kernel per case). The channel
# counts are specialised: knowing them divisible by 16 lets the NHWC pixel and filter loads vectorise. On an H200
# (2026-11-29, docs/BENCHMARKS.md) that alone took Convolution/conv2d's i10 from 1.78 to 0.42 ms.
@triton.jit(do_not_specialize=["N", "H", "W", "Hout", "Wout", "sh", "sw", "ph", "pw", "dh", "dw"])
def _conv2d_nhwc_kernel(x_ptr, w_ptr, b_ptr, y_ptr,
                        N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g,
                        sh, sw, ph, pw, dh, dw,
                        KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    g = tl.program_id(2).to(tl.int64)
    hw_out = Hout * Wout
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output positions (n, oh, ow)
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels within group g
    m_ok = m < N * hw_out
    co_ok = co < cout_g
    img = m // hw_out
    pos = m % hw_out
    ih0 = (pos // Wout) * sh - ph
    iw0 = (pos % Wout) * sw - pw
    acc = nhwc_conv_tile(x_ptr, w_ptr, img, g, ih0, iw0, m_ok, co, co_ok, Cin, H, W, cin_g, cout_g, dh, dw,
                         KH, KW, BLOCK_M, BLOCK_N, BLOCK_K)  # fmt: skip
    if HAS_BIAS:
        acc += tl.load(b_ptr + g * cout_g + co, mask=co_ok, other=0.0).to(tl.float32)[None, :]
    y_off = (img[:, None] * Cout + g * cout_g + co[None, :]) * hw_out + pos[:, None]  # NCHW output
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & co_ok[None, :])


class ConvShape(NamedTuple):
    """The sizes of a 2-D convolution of an (N, Cin, H, W) input with (Cout, cin_g, KH, KW) weights in groups of
    cin_g input and cout_g output channels, its strides, paddings and dilations, and its output's (Hout, Wout)."""

    N: int
    Cin: int
    H: int
    W: int
    Cout: int
    cin_g: int
    cout_g: int
    KH: int
    KW: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    Hout: int
    Wout: int


def pair(v) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def conv_shape(input, weight, stride=1, padding=0, dilation=1, groups=1, name="conv2d", error=RuntimeError):
    """The convolution's ConvShape; `error` (one line, named after the entry) when the channels do not split into
    the groups or the kernel is larger than the padded input. The convolution experts' wrappers all start here."""
    N, Cin, H, W = input.shape
    Cout, cin_g, KH, KW = weight.shape
    if Cin != cin_g * groups or Cout % groups:
        raise error(f"{name}: channels do not match groups")
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    Hout = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    Wout = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    if Hout <= 0 or Wout <= 0:
        raise error(f"{name}: the kernel is larger than the padded input")
    return ConvShape(N, Cin, H, W, Cout, cin_g, Cout // groups, KH, KW, sh, sw, ph, pw, dh, dw, Hout, Wout)


def nhwc_copies(input, weight, dtype=None):
    """The input copied to NHWC and the weights to (Cout, KH, KW, cin_g), so that the reduction index
    (kh, kw, ci) runs along contiguous memory in both; in `dtype` if given."""
    x = input if dtype is None else input.to(dtype)
    w = weight if dtype is None else weight.to(dtype)
    return x.permute(0, 2, 3, 1).contiguous(), w.permute(0, 2, 3, 1).contiguous()


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        raise NotImplementedError("string padding is not supported; give integers")
    N, Cin, H, W, Cout, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, Hout, Wout = conv_shape(
        input, weight, stride, padding, dilation, groups, "conv2d", ValueError)
    x, w = nhwc_copies(input, weight)
    y = torch.empty((N, Cout, Hout, Wout), dtype=input.dtype, device=input.device)
    b = bias.contiguous() if bias is not None else w  # placeholder is never read
    grid = (triton.cdiv(N * Hout * Wout, BLOCK_M), triton.cdiv(cout_g, BLOCK_N), groups)
    _conv2d_nhwc_kernel[grid](x, w, b, y, N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g,
                              sh, sw, ph, pw, dh, dw, KH=KH, KW=KW, HAS_BIAS=bias is not None,
                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                              num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return y
