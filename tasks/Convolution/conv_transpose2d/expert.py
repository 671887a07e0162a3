"""Expert kernel for Convolution/conv_transpose2d: an implicit GEMM in gather form. Each program owns a tile
of BLOCK_M output pixels (flattened over batch and output rows/columns) by BLOCK_N output channels of one
group; the reduction runs over (input channel, kh, kw) in BLOCK_K chunks, gathering for each output pixel the
input element ih = (oh + pad - kh*dil) / stride when that division is exact and in range, and multiplying
with tl.dot (fp32 accumulation). Bias is added in the epilogue."""

import torch
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N_MAX = 64
BLOCK_K = 32


@triton.jit
def _conv_t_kernel(x_ptr, w_ptr, b_ptr, out_ptr,
                   N, Cin, H, W, Cout, Hout, Wout, cin_g, cout_g, KH, KW,
                   sh, sw, ph, pw, dh, dw,
                   HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    g = tl.program_id(2).to(tl.int64)
    hw_out = Hout * Wout
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    m_ok = m < N * hw_out
    n = m // hw_out
    rem = m - n * hw_out
    oh = rem // Wout
    ow = rem - oh * Wout
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(tl.int64)  # channel within the group
    co_ok = co < cout_g
    ksize = KH * KW
    K = cin_g * ksize
    x_base = n * Cin * H * W + g * cin_g * H * W
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K).to(tl.int64)
        k_ok = k < K
        ci = k // ksize
        r = k - ci * ksize
        kh = r // KW
        kw = r - kh * KW
        th = oh[:, None] + ph - kh[None, :] * dh
        tw = ow[:, None] + pw - kw[None, :] * dw
        th_c = tl.where(th >= 0, th, 0)
        tw_c = tl.where(tw >= 0, tw, 0)
        ih = th_c // sh
        iw = tw_c // sw
        ok = (th >= 0) & (tw >= 0) & (ih * sh == th_c) & (iw * sw == tw_c) & (ih < H) & (iw < W)
        ok = ok & m_ok[:, None] & k_ok[None, :]
        a = tl.load(x_ptr + x_base[:, None] + ci[None, :] * H * W + ih * W + iw, mask=ok, other=0.0)
        w_off = (g * cin_g + ci[:, None]) * cout_g * ksize + co[None, :] * ksize + (kh * KW + kw)[:, None]
        b = tl.load(w_ptr + w_off, mask=k_ok[:, None] & co_ok[None, :], other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")  # outliers: TF32 too coarse
    co_glob = g * cout_g + co
    if HAS_BIAS:
        acc += tl.load(b_ptr + co_glob, mask=co_ok, other=0.0).to(tl.float32)[None, :]
    out_off = n[:, None] * Cout * hw_out + co_glob[None, :] * hw_out + rem[:, None]
    tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & co_ok[None, :])


def _pair(v):
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    x = input.contiguous()
    w = weight.contiguous()
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    n, cin, h, wd = x.shape
    kh, kw = w.shape[-2:]
    cout_g = w.shape[1]
    cout = cout_g * groups
    cin_g = cin // groups
    hout = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wout = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = torch.empty((n, cout, hout, wout), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    b = bias.contiguous() if bias is not None else x
    block_n = min(BLOCK_N_MAX, max(16, triton.next_power_of_2(cout_g)))
    grid = (triton.cdiv(n * hout * wout, BLOCK_M), triton.cdiv(cout_g, block_n), groups)
    _conv_t_kernel[grid](x, w, b, out, n, cin, h, wd, cout, hout, wout, cin_g, cout_g, kh, kw, sh, sw, ph, pw, dh, dw,
                         HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=BLOCK_K,
                         num_warps=8)  # fmt: skip
    return out
