"""Expert kernel for Fusion/fused_relu_max_pool2d_conv2d: direct convolution fused with max-pool and ReLU.

One row of a [BLOCK, RB] tile per pooled output (n, c_out, ph, pw): for each pool tap it evaluates the
conv output at that position as a tiled fp32 reduction over (C_in/groups, KH, KW) (zero padding), keeps
the max over valid taps (padding taps are -inf), then applies ReLU. The conv map is never written to memory. Suited to the
task's small-C_in shapes; fp32 accumulation, no TF32.
"""

import torch
import triton
import triton.language as tl

BLOCK = 256
RB = 32  # reduction tile over (ci, kh, kw)


@triton.jit
def _conv_pool_relu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_out,
    C_in, H, W, C_out, CH, CW, PH, PW, cin_g, cout_g,
    cs_h, cs_w, cp_h, cp_w, cd_h, cd_w, ps_h, ps_w, pp_h, pp_w, pd_h, pd_w,
    KH: tl.constexpr, KW: tl.constexpr, PKH: tl.constexpr, PKW: tl.constexpr, HAS_BIAS: tl.constexpr,
    RB: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_out
    pw = offs % PW
    ph = (offs // PW) % PH
    co = (offs // (PW * PH)) % C_out
    n = offs // (PW * PH * C_out)
    g = co // cout_g
    if HAS_BIAS:
        bias = tl.load(b_ptr + co, mask=ok, other=0.0).to(tl.float32)
    else:
        bias = tl.zeros([BLOCK], tl.float32)
    red = cin_g * KH * KW  # reduction length: (ci, kh, kw) flattened, matching the weight layout
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    for th in range(PKH):
        for tw in range(PKW):
            oh = ph * ps_h - pp_h + th * pd_h
            ow = pw * ps_w - pp_w + tw * pd_w
            tap_ok = ok & (oh >= 0) & (oh < CH) & (ow >= 0) & (ow < CW)
            acc = tl.zeros([BLOCK, RB], tl.float32)
            for r0 in range(0, red, RB):
                r = r0 + tl.arange(0, RB)
                kw = r % KW
                kh = (r // KW) % KH
                ci = r // (KW * KH)
                ih = oh[:, None] * cs_h - cp_h + kh[None, :] * cd_h
                iw = ow[:, None] * cs_w - cp_w + kw[None, :] * cd_w
                cin = g[:, None] * cin_g + ci[None, :]
                m = tap_ok[:, None] & (r[None, :] < red) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                xv = tl.load(x_ptr + ((n[:, None] * C_in + cin) * H + ih) * W + iw, mask=m, other=0.0)
                wv = tl.load(w_ptr + co[:, None] * red + r[None, :], mask=ok[:, None] & (r[None, :] < red),
                             other=0.0)  # fmt: skip
                acc += xv.to(tl.float32) * wv.to(tl.float32)
            conv = tl.sum(acc, axis=1) + bias
            best = tl.where(tap_ok, tl.maximum(best, conv), best)
    y = tl.maximum(best, 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=ok)


def _pair(v):
    return (int(v), int(v)) if isinstance(v, int) else tuple(int(a) for a in v)


def _pool_len(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def fused_relu_max_pool2d_conv2d(
    input, weight, bias=None, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
    pool_kernel_size=2, pool_stride=None, pool_padding=0, pool_dilation=1, pool_ceil_mode=False, inplace=False,
) -> torch.Tensor:  # fmt: skip
    x = input.contiguous()
    w = weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, cin_g, KH, KW = w.shape
    cs, cp, cd = _pair(conv_stride), _pair(conv_padding), _pair(conv_dilation)
    pk = _pair(pool_kernel_size)
    ps = _pair(pool_stride) if pool_stride is not None else pk
    pp, pd = _pair(pool_padding), _pair(pool_dilation)
    CH = (H + 2 * cp[0] - cd[0] * (KH - 1) - 1) // cs[0] + 1
    CW = (W + 2 * cp[1] - cd[1] * (KW - 1) - 1) // cs[1] + 1
    PH = _pool_len(CH, pk[0], ps[0], pp[0], pd[0], pool_ceil_mode)
    PW = _pool_len(CW, pk[1], ps[1], pp[1], pd[1], pool_ceil_mode)
    y = torch.empty((N, C_out, PH, PW), dtype=x.dtype, device=x.device)
    n_out = y.numel()
    if n_out:
        b = bias.contiguous() if bias is not None else w
        _conv_pool_relu_kernel[(triton.cdiv(n_out, BLOCK),)](
            x, w, b, y, n_out, C_in, H, W, C_out, CH, CW, PH, PW, cin_g, C_out // conv_groups,
            cs[0], cs[1], cp[0], cp[1], cd[0], cd[1], ps[0], ps[1], pp[0], pp[1], pd[0], pd[1],
            KH=KH, KW=KW, PKH=pk[0], PKW=pk[1], HAS_BIAS=bias is not None, RB=RB, BLOCK=BLOCK, num_warps=8,
        )  # fmt: skip
    return y
