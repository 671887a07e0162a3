"""Expert kernel for Fusion/fused_conv2d_add: an implicit-GEMM convolution whose epilogue adds the bias and
alpha * other.

The input is copied once to NHWC and the weights to (C_out, kh, kw, C_in/groups), so the reduction index
(kh, kw, ci) runs along contiguous memory in both operands. Each program owns BLOCK_M output pixels of one
image and group by BLOCK_N output channels; per filter tap it gathers the shifted input rows and streams
channel blocks through tl.dot (fp32 accumulation, TF32 on the GPU as the task's tolerance allows). `other`
is read through broadcast strides (0 along broadcast dims), so it is never materialised at y's shape; a
Python-number `other` is folded into the bias term.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.174 / 0.637 / 2.47 ms at H =
128 / 256 / 512 against eager's 0.123 / 0.416 / 1.60 ms (cuDNN's TF32 convolution, then torch.add), 0.67x; 0.084x
before the kernel specialised its channel counts, which lets the NHWC loads vectorise. With C_in = C_out = 32 each
program still runs 9 tl.dots of 128x32x32, one per filter tap.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv_shape, nhwc_conv_tile, nhwc_copies

BLOCK_M = 128
CPU_BLOCK_M = 1024  # the CPU interpreter runs fewer, larger tiles faster
MAX_BLOCK_N, MAX_BLOCK_K = 64, 32
NUM_WARPS, NUM_STAGES = 4, 3


# Spatial sizes and strides stay runtime values (specialising them would compile a kernel per case). The channel
# counts are specialised: knowing them divisible by 16 lets the NHWC pixel and filter loads vectorise. On an H200
# (2026-11-29, docs/BENCHMARKS.md) that alone took Convolution/conv2d's i10 from 1.78 to 0.42 ms.
@triton.jit(do_not_specialize=["N", "H", "W", "Hout", "Wout", "sh", "sw", "ph", "pw", "dh", "dw"])
def _conv_add_kernel(x_ptr, w_ptr, b_ptr, o_ptr, y_ptr,
                     N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, groups,
                     sh, sw, ph, pw, dh, dw, so_n, so_c, so_h, so_w, alpha, scalar_add,
                     KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_OTHER: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    img = tl.program_id(2).to(tl.int64) // groups
    g = tl.program_id(2).to(tl.int64) % groups
    hw_out = Hout * Wout
    pos = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixels of image img
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels within group g
    pos_ok = pos < hw_out
    co_ok = co < cout_g
    oh = pos // Wout
    ow = pos % Wout
    ih0 = oh * sh - ph
    iw0 = ow * sw - pw
    acc = nhwc_conv_tile(x_ptr, w_ptr, img, g, ih0, iw0, pos_ok, co, co_ok, Cin, H, W, cin_g, cout_g, dh, dw,
                         KH, KW, BLOCK_M, BLOCK_N, BLOCK_K)  # fmt: skip
    cg = g * cout_g + co  # global output channel
    if HAS_BIAS:
        acc += tl.load(b_ptr + cg, mask=co_ok, other=0.0)[None, :]
    acc += scalar_add
    out_mask = pos_ok[:, None] & co_ok[None, :]
    if HAS_OTHER:
        o_off = img * so_n + cg[None, :] * so_c + oh[:, None] * so_h + ow[:, None] * so_w
        acc += alpha * tl.load(o_ptr + o_off, mask=out_mask, other=0.0)
    y_off = (img * Cout + cg[None, :]) * hw_out + pos[:, None]  # NCHW output
    tl.store(y_ptr + y_off, acc, mask=out_mask)


def _block(n, lo, hi):
    return max(lo, min(hi, triton.next_power_of_2(max(int(n), 1))))


def fused_conv2d_add(input, weight, bias=None, other=None, stride=1, padding=0, dilation=1, groups=1, alpha=1,
                     out=None):  # fmt: skip
    N, Cin, H, W, Cout, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, Hout, Wout = conv_shape(
        input, weight, stride, padding, dilation, groups, "fused_conv2d_add")
    x, w = nhwc_copies(input, weight, torch.float32)
    y = torch.empty((N, Cout, Hout, Wout), dtype=torch.float32, device=input.device)
    scalar_add, o, strides = 0.0, y, (0, 0, 0, 0)
    if isinstance(other, torch.Tensor):
        o = other.to(torch.float32).expand(y.shape)  # a broadcast view: strides 0 where other has size 1
        strides = tuple(o.stride())
    elif other is not None:
        scalar_add = float(alpha) * float(other)
    if y.numel() == 0:
        return y
    block_m = BLOCK_M if input.is_cuda else CPU_BLOCK_M
    block_n, block_k = _block(cout_g, 16, MAX_BLOCK_N), _block(cin_g, 16, MAX_BLOCK_K)
    b = bias.to(torch.float32).contiguous() if bias is not None else w  # placeholder is never read
    grid = (triton.cdiv(Hout * Wout, block_m), triton.cdiv(cout_g, block_n), N * groups)
    _conv_add_kernel[grid](x, w, b, o, y, N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, groups,
                           sh, sw, ph, pw, dh, dw, *strides, float(alpha), scalar_add,
                           KH=KH, KW=KW, HAS_BIAS=bias is not None, HAS_OTHER=isinstance(other, torch.Tensor),
                           BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                           num_warps=NUM_WARPS, num_stages=NUM_STAGES)  # fmt: skip
    return y
