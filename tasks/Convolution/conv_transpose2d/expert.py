"""Expert kernel for Convolution/conv_transpose2d: an implicit GEMM per output phase (sub-pixel decomposition).

Output pixel (oh, ow) receives x[ih, iw] * w[kh, kw] only where oh + pH - kh*dH = ih*sH (and likewise for
w), so the taps that can reach it depend only on its phase (oh mod sH, ow mod sW). Each program owns one
phase of one group and a tile of BLOCK_M output pixels of that phase (flattened over batch and the phase's
rows/columns) by BLOCK_N output channels; for each tap valid for its phase (a scalar test, taken once per
tap) the input pixels ih = i + (rh + pH - kh*dH) / sH form a shifted, unstrided grid, and channel blocks
stream through tl.dot (fp32 accumulation; TF32 on the GPU, within the task's matmul tolerance). No
multiply is spent on taps that cannot contribute and no index is divided per element. The input is
copied once to NHWC and the weight to (kH, kW, Cin, Cout/groups), so both operands are contiguous along
the reduction; bias is added in the epilogue.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 0.491 / 2.80 / 17.7 ms at i = 9 / 10 / 11 against eager's
0.204 / 1.17 / 5.11 ms (cuDNN's TF32 transposed convolution), 0.369x. Against the TF32 peak the expert reaches
8.0 / 11.2 / 14.1% and eager 19 / 27 / 49%. Each of the 4 stride-2 phases runs 1, 2 or 4 taps, and each tap its own
loop of C_in/32 = 8 / 16 / 32 tl.dot steps of 128x128x32, so the 3-stage pipeline restarts at every tap, consistent
with the share rising with C_in (derived from the code, not timed). One K loop over (tap, channel block) per phase,
TMA loads and autotuned tiles would be the next steps. Specialising the channel counts, which took conv2d
from 0.22x to 0.77x, moved this expert only from 0.36x to 0.39x on an H200 (2026-11-29, docs/BENCHMARKS.md): 0.391 /
2.46 / 17.2 ms against eager's 0.184 / 1.08 / 4.80 ms; why its phases gain less was not measured.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32
NUM_WARPS, NUM_STAGES = 8, 3


# Spatial sizes and strides stay runtime values (specialising them would compile a kernel per case). The channel
# counts are specialised: knowing them divisible by 16 lets the NHWC pixel and filter loads vectorise. On an H200
# (2026-11-29, docs/BENCHMARKS.md) that alone took Convolution/conv2d's i10 from 1.78 to 0.42 ms.
@triton.jit(do_not_specialize=["N", "H", "W", "Hout", "Wout", "Hp", "Wp", "sh", "sw", "ph", "pw", "dh", "dw"])
def _conv_t_phase_kernel(x_ptr, w_ptr, b_ptr, out_ptr,
                         N, Cin, H, W, Cout, Hout, Wout, Hp, Wp, cin_g, cout_g,
                         sh, sw, ph, pw, dh, dw,
                         KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    pid_pg = tl.program_id(2)
    phase = pid_pg % (sh * sw)
    g = (pid_pg // (sh * sw)).to(tl.int64)
    rh = phase // sw
    rw = phase % sw
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    n = m // (Hp * Wp)
    rem = m - n * (Hp * Wp)
    i = rem // Wp
    j = rem - i * Wp
    oh = rh + i * sh
    ow = rw + j * sw
    m_ok = (n < N) & (oh < Hout) & (ow < Wout)
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(tl.int64)  # channel within the group
    co_ok = co < cout_g
    kk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kh in tl.static_range(KH):
        th = rh + ph - kh * dh  # oh + pH - kh*dH = (i*sH) + th: the tap reaches this phase iff sH divides th
        if ((th % sh) + sh) % sh == 0:
            ih = i + th // sh  # exact division
            for kw in tl.static_range(KW):
                tw = rw + pw - kw * dw
                if ((tw % sw) + sw) % sw == 0:
                    iw = j + tw // sw
                    ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                    a_row = ((n * H + ih) * W + iw) * Cin + g * cin_g
                    w_row = (kh * KW + kw) * Cin + g * cin_g
                    for c0 in range(0, cin_g, BLOCK_K):
                        ci = c0 + kk
                        ci_ok = ci < cin_g
                        a = tl.load(x_ptr + a_row[:, None] + ci[None, :], mask=ok[:, None] & ci_ok[None, :], other=0.0)
                        b = tl.load(w_ptr + (w_row + ci)[:, None] * cout_g + co[None, :],
                                    mask=ci_ok[:, None] & co_ok[None, :], other=0.0)  # fmt: skip
                        acc += tl.dot(a, b)
    co_glob = g * cout_g + co
    if HAS_BIAS:
        acc += tl.load(b_ptr + co_glob, mask=co_ok, other=0.0).to(tl.float32)[None, :]
    out_off = (n[:, None] * Cout + co_glob[None, :]) * (Hout * Wout) + (oh * Wout + ow)[:, None]
    tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & co_ok[None, :])


def _pair(v):
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    n, cin, h, wd = input.shape
    kh, kw = weight.shape[-2:]
    cout_g = weight.shape[1]
    cout = cout_g * groups
    cin_g = cin // groups
    hout = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wout = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = torch.empty((n, cout, hout, wout), dtype=input.dtype, device=input.device)
    if out.numel() == 0:
        return out
    x = input.permute(0, 2, 3, 1).contiguous()  # NHWC layout copy
    w = weight.permute(2, 3, 0, 1).contiguous()  # (kH, kW, Cin, Cout/groups) layout copy
    b = bias.contiguous() if bias is not None else w  # placeholder is never read
    hp, wp = triton.cdiv(hout, sh), triton.cdiv(wout, sw)  # rows and columns of the largest phase
    grid = (triton.cdiv(n * hp * wp, BLOCK_M), triton.cdiv(cout_g, BLOCK_N), groups * sh * sw)
    _conv_t_phase_kernel[grid](x, w, b, out, n, cin, h, wd, cout, hout, wout, hp, wp, cin_g, cout_g,
                               sh, sw, ph, pw, dh, dw, KH=kh, KW=kw, HAS_BIAS=bias is not None,
                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                               num_warps=NUM_WARPS, num_stages=NUM_STAGES)  # fmt: skip
    return out
