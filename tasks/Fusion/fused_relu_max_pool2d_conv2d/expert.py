"""Expert kernel for Fusion/fused_relu_max_pool2d_conv2d: implicit-GEMM convolution fused with max-pool and ReLU.

Each program owns a tile of BLOCK_P pooled outputs (flattened over batch and pooled rows/columns) by
BLOCK_C output channels of one group. For each pool tap it evaluates the conv outputs under that tap as a
product of an on-the-fly im2col tile [BLOCK_P, BLOCK_K] of the input (zero padding as a load mask) with
the weight tile [BLOCK_K, BLOCK_C] (tl.dot, fp32 accumulation; TF32 on the GPU, within the task's
matmul tolerance), so every input value loaded serves all BLOCK_C channels; it keeps the running max over
the valid taps (padding taps are -inf), then adds the bias and applies ReLU (max and ReLU commute with
the per-channel bias add). The conv map is never written to memory.
"""

import torch
import triton
import triton.language as tl

BLOCK_P, BLOCK_C_MAX, BLOCK_K = 128, 64, 32
NUM_WARPS = 4


@triton.jit
def _conv_pool_relu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_pooled,
    C_in, H, W, C_out, CH, CW, PH, PW, cin_g, cout_g,
    cs_h, cs_w, cp_h, cp_w, cd_h, cd_w, ps_h, ps_w, pp_h, pp_w, pd_h, pd_w,
    KH: tl.constexpr, KW: tl.constexpr, PKH: tl.constexpr, PKW: tl.constexpr, HAS_BIAS: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    ok = offs < n_pooled  # pooled positions over (n, ph, pw)
    pw = offs % PW
    ph = (offs // PW) % PH
    n = offs // (PW * PH)
    g = tl.program_id(2)
    co = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)  # channel within the group
    co_ok = co < cout_g
    co_glob = g * cout_g + co
    red = cin_g * KH * KW  # reduction length: (ci, kh, kw) flattened, the weight's own layout
    x_base = (n * C_in + g * cin_g) * H * W
    best = tl.full([BLOCK_P, BLOCK_C], float("-inf"), tl.float32)
    for th in tl.static_range(PKH):
        for tw in tl.static_range(PKW):
            oh = ph * ps_h - pp_h + th * pd_h
            ow = pw * ps_w - pp_w + tw * pd_w
            tap_ok = ok & (oh >= 0) & (oh < CH) & (ow >= 0) & (ow < CW)
            acc = tl.zeros([BLOCK_P, BLOCK_C], tl.float32)
            for r0 in range(0, red, BLOCK_K):
                r = r0 + tl.arange(0, BLOCK_K)
                r_ok = r < red
                kw = r % KW
                kh = (r // KW) % KH
                ci = r // (KW * KH)
                ih = oh[:, None] * cs_h - cp_h + kh[None, :] * cd_h
                iw = ow[:, None] * cs_w - cp_w + kw[None, :] * cd_w
                m = tap_ok[:, None] & r_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                a = tl.load(x_ptr + x_base[:, None] + (ci[None, :] * H + ih) * W + iw, mask=m, other=0.0)
                b = tl.load(w_ptr + co_glob[None, :] * red + r[:, None], mask=r_ok[:, None] & co_ok[None, :],
                            other=0.0)  # fmt: skip
                acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
            best = tl.where(tap_ok[:, None], tl.maximum(best, acc), best)
    if HAS_BIAS:
        best += tl.load(b_ptr + co_glob, mask=co_ok, other=0.0).to(tl.float32)[None, :]
    y = tl.maximum(best, 0.0)
    y_off = (n[:, None] * C_out + co_glob[None, :]) * (PH * PW) + (ph * PW + pw)[:, None]
    tl.store(y_ptr + y_off, y.to(y_ptr.dtype.element_ty), mask=ok[:, None] & co_ok[None, :])


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
    n_pooled = N * PH * PW
    if y.numel():
        b = bias.contiguous() if bias is not None else w
        cout_g = C_out // conv_groups
        block_c = min(BLOCK_C_MAX, max(16, triton.next_power_of_2(cout_g)))
        grid = (triton.cdiv(n_pooled, BLOCK_P), triton.cdiv(cout_g, block_c), conv_groups)
        _conv_pool_relu_kernel[grid](
            x, w, b, y, n_pooled, C_in, H, W, C_out, CH, CW, PH, PW, cin_g, cout_g,
            cs[0], cs[1], cp[0], cp[1], cd[0], cd[1], ps[0], ps[1], pp[0], pp[1], pd[0], pd[1],
            KH=KH, KW=KW, PKH=pk[0], PKW=pk[1], HAS_BIAS=bias is not None,
            BLOCK_P=BLOCK_P, BLOCK_C=block_c, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS,
        )  # fmt: skip
    return y
