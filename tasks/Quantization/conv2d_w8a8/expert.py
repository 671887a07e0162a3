"""Expert kernels for Quantization/conv2d_w8a8: int8 quantization passes, then an implicit-GEMM int8 convolution.

The activation scale is one global max: _absmax_kernel writes per-block maxima and _scale_kernel folds them
into s_x = max / 127. _quantize_kernel writes int8 activations; _quantize_rows_kernel gives each output
channel of the weight (a row of Cin*kh*kw values) its own scale and int8 values. _conv_kernel is an
implicit GEMM, (N*Ho*Wo) x Cout x (Cin*kh*kw): it gathers int8 input patches on the fly (zero padding by
masking), accumulates exactly in int32 with tl.dot, and dequantizes (acc * s_x) * s_w[c] (+ bias) in fp32.
"""

import torch
import triton
import triton.language as tl

AMAX_BLOCK = 4096
BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32


@triton.jit
def _absmax_kernel(x_ptr, part_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(part_ptr + tl.program_id(0), tl.max(tl.abs(v), axis=0))


@triton.jit
def _scale_kernel(part_ptr, scale_ptr, n_parts, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = tl.zeros((BLOCK,), dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK):
        m = tl.maximum(m, tl.load(part_ptr + p0 + offs, mask=p0 + offs < n_parts, other=0.0))
    amax = tl.zeros((BLOCK,), dtype=tl.float32) + tl.max(m, axis=0)  # the global max in every lane
    s = tl.math.div_rn(amax, tl.full((BLOCK,), 127.0, tl.float32))
    tl.store(scale_ptr + offs, tl.where(amax == 0.0, 1.0, s), mask=offs == 0)


@triton.jit
def _round_clamp(v):
    a = tl.floor(tl.abs(v) + 0.5)  # round half away from zero, |v| + 0.5 rounded in fp32
    return tl.minimum(tl.maximum(tl.where(v < 0.0, -a, a), -127.0), 127.0).to(tl.int8)


@triton.jit
def _quantize_kernel(x_ptr, scale_ptr, q_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    s = tl.load(scale_ptr + tl.zeros((BLOCK,), dtype=tl.int32))
    tl.store(q_ptr + offs, _round_clamp(tl.math.div_rn(v, s)), mask=mask)


@triton.jit
def _quantize_rows_kernel(w_ptr, q_ptr, scale_ptr, n_rows, L, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < n_rows
    cols = tl.arange(0, BLOCK)
    amax = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for c0 in range(0, L, BLOCK):
        c = (c0 + cols).to(tl.int64)
        m = rmask[:, None] & (c[None, :] < L)
        amax = tl.maximum(amax, tl.abs(tl.load(w_ptr + rows[:, None] * L + c[None, :], mask=m, other=0.0)))
    mx = tl.max(amax, axis=1)
    s = tl.math.div_rn(mx, tl.full(mx.shape, 127.0, tl.float32))
    s = tl.where(mx == 0.0, 1.0, s)
    tl.store(scale_ptr + rows, s, mask=rmask)
    s2 = tl.broadcast_to(s[:, None], (ROWS, BLOCK))
    for c0 in range(0, L, BLOCK):
        c = (c0 + cols).to(tl.int64)
        m = rmask[:, None] & (c[None, :] < L)
        v = tl.load(w_ptr + rows[:, None] * L + c[None, :], mask=m, other=0.0)
        tl.store(q_ptr + rows[:, None] * L + c[None, :], _round_clamp(tl.math.div_rn(v, s2)), mask=m)


@triton.jit
def _conv_kernel(
    xq_ptr, wq_ptr, sx_ptr, sw_ptr, bias_ptr, out_ptr,
    Nb, Cin, H, W, Cout, Ho, Wo, KH, KW, stride, padding,
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    M = Nb * Ho * Wo
    K = Cin * KH * KW
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixels (n, ho, wo)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels
    n_idx = rm // (Ho * Wo)
    hw = rm % (Ho * Wo)
    h0 = (hw // Wo) * stride - padding
    w0 = (hw % Wo) * stride - padding
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        k = (k0 + rk).to(tl.int64)  # (ci, kh, kw) flattened as in the weight
        ci = k // (KH * KW)
        kr = k % (KH * KW)
        hh = h0[:, None] + (kr // KW)[None, :]
        ww = w0[:, None] + (kr % KW)[None, :]
        am = (rm[:, None] < M) & (k[None, :] < K) & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
        a = tl.load(xq_ptr + ((n_idx[:, None] * Cin + ci[None, :]) * H + hh) * W + ww, mask=am, other=0)
        b = tl.load(wq_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & (rn[None, :] < Cout), other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)  # int8 x int8 -> exact int32
    s_x = tl.load(sx_ptr + tl.zeros((BLOCK_M,), dtype=tl.int32))
    s_w = tl.load(sw_ptr + rn, mask=rn < Cout, other=0.0)
    out = acc.to(tl.float32) * s_x[:, None] * s_w[None, :]
    if HAS_BIAS:
        out = out + tl.load(bias_ptr + rn, mask=rn < Cout, other=0.0)[None, :]
    o_ptrs = out_ptr + (n_idx[:, None] * Cout + rn[None, :]) * (Ho * Wo) + hw[:, None]
    tl.store(o_ptrs, out, mask=(rm[:, None] < M) & (rn[None, :] < Cout))


def conv2d_w8a8(input, weight, bias=None, stride: int = 1, padding: int = 0):
    x = input.contiguous().float()
    w = weight.contiguous().float()
    Nb, Cin, H, W = x.shape
    Cout, Cin2, KH, KW = w.shape
    if Cin != Cin2:
        raise RuntimeError(f"conv2d_w8a8: input has {Cin} channels, weight expects {Cin2}")
    Ho = (H + 2 * padding - KH) // stride + 1
    Wo = (W + 2 * padding - KW) // stride + 1
    dev = x.device
    n = x.numel()
    n_parts = triton.cdiv(n, AMAX_BLOCK)
    parts = torch.empty((max(n_parts, 1),), dtype=torch.float32, device=dev)
    s_x = torch.empty((1,), dtype=torch.float32, device=dev)
    if n_parts:
        _absmax_kernel[(n_parts,)](x, parts, n, BLOCK=AMAX_BLOCK)
    else:
        parts.zero_()
    _scale_kernel[(1,)](parts, s_x, max(n_parts, 1), BLOCK=1024)
    xq = torch.empty(x.shape, dtype=torch.int8, device=dev)
    if n:
        _quantize_kernel[(n_parts,)](x, s_x, xq, n, BLOCK=AMAX_BLOCK)
    L = Cin * KH * KW
    wq = torch.empty((Cout, L), dtype=torch.int8, device=dev)
    s_w = torch.empty((Cout,), dtype=torch.float32, device=dev)
    rows = 8
    _quantize_rows_kernel[(triton.cdiv(Cout, rows),)](
        w, wq, s_w, Cout, L, ROWS=rows, BLOCK=min(512, triton.next_power_of_2(L))
    )
    out = torch.empty((Nb, Cout, Ho, Wo), dtype=torch.float32, device=dev)
    M = Nb * Ho * Wo
    if M and Cout:
        bn = min(BLOCK_N, max(16, triton.next_power_of_2(Cout)))
        b = bias.contiguous().float() if bias is not None else s_w  # dummy pointer when no bias
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(Cout, bn))
        _conv_kernel[grid](
            xq, wq, s_x, s_w, b, out, Nb, Cin, H, W, Cout, Ho, Wo, KH, KW, stride, padding,
            HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=bn, BLOCK_K=BLOCK_K, num_warps=4,
        )  # fmt: skip
    return out
