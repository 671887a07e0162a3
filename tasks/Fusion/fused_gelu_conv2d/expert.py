"""Expert kernel for Fusion/fused_gelu_conv2d: an implicit-GEMM convolution whose epilogue adds the bias and
applies GELU (erf form, or the tanh form written through a sigmoid: tanh(u) = 2 sigmoid(2u) - 1).

The input is copied once to NHWC and the weights to (C_out, kh, kw, C_in/groups), so the reduction index
(kh, kw, ci) runs along contiguous memory in both operands. Each program owns BLOCK_M output pixels of one
image and group by BLOCK_N output channels; per filter tap it gathers the shifted input rows and streams
channel blocks through tl.dot (fp32 accumulation, TF32 on the GPU as the task's tolerance allows), and
the activation is applied before the single store.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.097 / 0.331 / 1.26 / 5.03 ms at
h = 128 / 256 / 512 / 1024 against eager's 0.119 / 0.348 / 1.32 / 5.27 ms (cuDNN's TF32 convolution, then GELU),
1.09x; 0.30x before the kernel specialised its channel counts, which lets the NHWC loads vectorise.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv_shape, nhwc_conv_tile, nhwc_copies

BLOCK_M = 128
CPU_BLOCK_M = 1024  # the CPU interpreter runs fewer, larger tiles faster
MAX_BLOCK_N, MAX_BLOCK_K = 64, 32
NUM_WARPS, NUM_STAGES = 4, 3
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
GELU_CUBIC = tl.constexpr(0.044715)
INV_SQRT_2 = tl.constexpr(0.7071067811865476)


# Spatial sizes and strides stay runtime values (specialising them would compile a kernel per case). The channel
# counts are specialised: knowing them divisible by 16 lets the NHWC pixel and filter loads vectorise. On an H200
# (2026-11-29, docs/BENCHMARKS.md) that alone took Convolution/conv2d's i10 from 1.78 to 0.42 ms.
@triton.jit(do_not_specialize=["N", "H", "W", "Hout", "Wout", "sh", "sw", "ph", "pw", "dh", "dw"])
def _conv_gelu_kernel(x_ptr, w_ptr, b_ptr, y_ptr,
                     N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, groups,
                     sh, sw, ph, pw, dh, dw,
                     KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr, TANH: tl.constexpr,
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
    if TANH:
        u = SQRT_2_OVER_PI * (acc + GELU_CUBIC * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * u)  # 0.5 x (1 + tanh(u)) = x sigmoid(2u)
    else:
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * INV_SQRT_2))
    out_mask = pos_ok[:, None] & co_ok[None, :]
    y_off = (img * Cout + cg[None, :]) * hw_out + pos[:, None]  # NCHW output
    tl.store(y_ptr + y_off, acc, mask=out_mask)


def _block(n, lo, hi):
    return max(lo, min(hi, triton.next_power_of_2(max(int(n), 1))))


def fused_gelu_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, approximate="none",
                      out=None):  # fmt: skip
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"fused_gelu_conv2d: approximate must be 'none' or 'tanh', got {approximate!r}")
    N, Cin, H, W, Cout, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, Hout, Wout = conv_shape(
        input, weight, stride, padding, dilation, groups, "fused_gelu_conv2d")
    x, w = nhwc_copies(input, weight, torch.float32)
    y = torch.empty((N, Cout, Hout, Wout), dtype=torch.float32, device=input.device)
    if y.numel():
        block_m = BLOCK_M if input.is_cuda else CPU_BLOCK_M
        block_n, block_k = _block(cout_g, 16, MAX_BLOCK_N), _block(cin_g, 16, MAX_BLOCK_K)
        b = bias.to(torch.float32).contiguous() if bias is not None else w  # placeholder is never read
        grid = (triton.cdiv(Hout * Wout, block_m), triton.cdiv(cout_g, block_n), N * groups)
        _conv_gelu_kernel[grid](x, w, b, y, N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, groups,
                                sh, sw, ph, pw, dh, dw, KH=KH, KW=KW, HAS_BIAS=bias is not None,
                                TANH=approximate == "tanh", BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                num_warps=NUM_WARPS, num_stages=NUM_STAGES)  # fmt: skip
    if out is not None:
        return out.copy_(y)
    return y
