"""Expert kernels for Fusion/fused_instance_norm_selu_conv2d: conv2d, SELU and instance normalization in three
passes over the output.

1. An implicit-GEMM convolution over an NHWC copy of the input (tl.dot per filter tap and channel block,
   fp32 accumulation, TF32 on the GPU as the task's tolerance allows) adds the bias and applies SELU. A
   program's tile lies in one image, so its epilogue also adds the tile's per-channel sum and sum of squares
   to the (n, c) plane's statistics (fp64 atomics), sparing a separate read of y for them.
2. A tiny kernel turns each plane's sums into its mean and 1 / sqrt(biased var + eps).
3. One elementwise pass per (plane, block) normalizes y in place.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.144 / 0.499 / 1.88 ms at H =
128 / 256 / 512 against eager's 0.159 / 0.568 / 2.30 ms (cuDNN's TF32 convolution, then SELU and instance_norm),
1.16x; 0.17x before the kernel specialised its channel counts, which lets the NHWC loads vectorise.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv_shape, nhwc_conv_tile, nhwc_copies

BLOCK_M = 128
CPU_BLOCK_M = 1024  # the CPU interpreter runs fewer, larger tiles faster
MAX_BLOCK_N, MAX_BLOCK_K = 64, 32
NUM_WARPS, NUM_STAGES = 4, 3
APPLY_BLOCK = 2048
STATS_BLOCK = 1024
SELU_SCALE = tl.constexpr(1.0507009873554805)
SELU_ALPHA = tl.constexpr(1.6732632423543772)


# Spatial sizes and strides stay runtime values (specialising them would compile a kernel per case). The channel
# counts are specialised: knowing them divisible by 16 lets the NHWC pixel and filter loads vectorise. On an H200
# (2026-11-29, docs/BENCHMARKS.md) that alone took Convolution/conv2d's i10 from 1.78 to 0.42 ms.
@triton.jit(do_not_specialize=["N", "H", "W", "Hout", "Wout", "sh", "sw", "ph", "pw", "dh", "dw"])
def _conv_stats_kernel(x_ptr, w_ptr, b_ptr, y_ptr, sum_ptr, sumsq_ptr,
                     N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, groups,
                     sh, sw, ph, pw, dh, dw, stat_n_stride,
                     KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr, SELU: tl.constexpr,
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
    if SELU:
        acc = SELU_SCALE * tl.where(acc > 0.0, acc, SELU_ALPHA * (tl.exp(tl.minimum(acc, 0.0)) - 1.0))
    out_mask = pos_ok[:, None] & co_ok[None, :]
    # the tile's partial sums for the normalization statistics, accumulated in fp64 so that
    # var = E[y^2] - mean^2 keeps full fp32 accuracy even when |mean| >> std
    vals = tl.where(out_mask, acc, 0.0)
    stat = img * stat_n_stride + cg
    tl.atomic_add(sum_ptr + stat, tl.sum(vals, axis=0).to(tl.float64), mask=co_ok)
    tl.atomic_add(sumsq_ptr + stat, tl.sum(vals * vals, axis=0).to(tl.float64), mask=co_ok)
    y_off = (img * Cout + cg[None, :]) * hw_out + pos[:, None]  # NCHW output
    tl.store(y_ptr + y_off, acc, mask=out_mask)



@triton.jit
def _finalize_kernel(sum_ptr, sumsq_ptr, mean_ptr, rstd_ptr, n_stats, count, eps, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n_stats
    mean = tl.load(sum_ptr + i, mask=m, other=0.0) / count
    var = tl.maximum(tl.load(sumsq_ptr + i, mask=m, other=0.0) / count - mean * mean, 0.0)
    tl.store(mean_ptr + i, mean.to(tl.float32), mask=m)
    tl.store(rstd_ptr + i, 1.0 / tl.sqrt(var.to(tl.float32) + eps), mask=m)


@triton.jit
def _normalize_kernel(y_ptr, mean_ptr, rstd_ptr, L, C, PER_PLANE: tl.constexpr, BLOCK: tl.constexpr):
    plane = tl.program_id(1).to(tl.int64)  # (n, c) plane of L = H * W elements
    stat = plane if PER_PLANE else plane % C
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < L
    ptrs = y_ptr + plane * L + offs
    v = (tl.load(ptrs, mask=m, other=0.0) - tl.load(mean_ptr + stat)) * tl.load(rstd_ptr + stat)
    tl.store(ptrs, v, mask=m)


def _block(n, lo, hi):
    return max(lo, min(hi, triton.next_power_of_2(max(int(n), 1))))


def fused_instance_norm_selu_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                                    num_features=None, eps=1e-05, momentum=0.1, affine=False,
                                    track_running_stats=False):  # fmt: skip
    N, Cin, H, W, Cout, cin_g, cout_g, KH, KW, sh, sw, ph, pw, dh, dw, Hout, Wout = conv_shape(
        input, weight, stride, padding, dilation, groups, "fused_instance_norm_selu_conv2d")
    x, w = nhwc_copies(input, weight, torch.float32)
    y = torch.empty((N, Cout, Hout, Wout), dtype=torch.float32, device=input.device)
    if y.numel() == 0:
        return y
    L = Hout * Wout
    sums = torch.zeros((2, N * Cout), dtype=torch.float64, device=input.device)
    block_m = BLOCK_M if input.is_cuda else CPU_BLOCK_M
    block_n, block_k = _block(cout_g, 16, MAX_BLOCK_N), _block(cin_g, 16, MAX_BLOCK_K)
    b = bias.to(torch.float32).contiguous() if bias is not None else w  # placeholder is never read
    grid = (triton.cdiv(L, block_m), triton.cdiv(cout_g, block_n), N * groups)
    _conv_stats_kernel[grid](x, w, b, y, sums[0], sums[1], N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, groups,
                             sh, sw, ph, pw, dh, dw, Cout, KH=KH, KW=KW, HAS_BIAS=bias is not None, SELU=True,
                             BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                             num_warps=NUM_WARPS, num_stages=NUM_STAGES)  # fmt: skip
    stats = torch.empty((2, N * Cout), dtype=torch.float32, device=input.device)
    _finalize_kernel[(triton.cdiv(N * Cout, STATS_BLOCK),)](sums[0], sums[1], stats[0], stats[1], N * Cout, L,
                                                              float(eps), BLOCK=STATS_BLOCK)  # fmt: skip
    _normalize_kernel[(triton.cdiv(L, APPLY_BLOCK), N * Cout)](y, stats[0], stats[1], L, Cout, PER_PLANE=True,
                                                               BLOCK=APPLY_BLOCK)  # fmt: skip
    return y
