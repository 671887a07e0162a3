"""Expert kernels for Quantization/attention_w8a8: per-token int8 quantization, then a fused int8 flash attention.

_quantize_rows_kernel gives every token row of Q, K and V its scale max|r| / 127 and int8 values (IEEE
division, round half away from zero). _attention_kernel keeps a BLOCK_M x D block of int8 queries and
streams key/value blocks: the integer scores come from an int8 tl.dot with exact int32 accumulation, are
dequantized and scaled by 1/sqrt(D) in fp32, folded into an online (running max) softmax, and multiplied
with the dequantized values in fp32. The S x S score matrix is never written to memory.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N = 64, 64


@triton.jit
def _quantize_rows_kernel(x_ptr, q_ptr, scale_ptr, n_rows, D, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < D)
    x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0)
    amax = tl.max(tl.abs(x), axis=1)
    s = tl.math.div_rn(amax, tl.full(amax.shape, 127.0, tl.float32))
    s = tl.where(amax == 0.0, 1.0, s)
    v = tl.math.div_rn(x, tl.broadcast_to(s[:, None], (ROWS, BLOCK_D)))
    a = tl.floor(tl.abs(v) + 0.5)
    q = tl.minimum(tl.maximum(tl.where(v < 0.0, -a, a), -127.0), 127.0)
    tl.store(q_ptr + rows[:, None] * BLOCK_D + cols[None, :], q.to(tl.int8), mask=rows[:, None] < n_rows)
    tl.store(scale_ptr + rows, s, mask=rows < n_rows)


@triton.jit
def _attention_kernel(
    qq_ptr, qk_ptr, qv_ptr, sq_ptr, sk_ptr, sv_ptr, out_ptr, S, D, sqrt_d,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    batch = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    row0 = batch * S
    q = tl.load(qq_ptr + (row0 + rm[:, None]) * BLOCK_D + rd[None, :], mask=rm[:, None] < S, other=0)
    s_q = tl.load(sq_ptr + row0 + rm, mask=rm < S, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, S, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N).to(tl.int64)
        nmask = rn < S
        kt = tl.load(qk_ptr + (row0 + rn[None, :]) * BLOCK_D + rd[:, None], mask=nmask[None, :], other=0)
        iscore = tl.dot(q, kt, out_dtype=tl.int32)  # int8 x int8 -> exact int32
        s_k = tl.load(sk_ptr + row0 + rn, mask=nmask, other=0.0)
        scores = iscore.to(tl.float32) * s_q[:, None] * s_k[None, :] / sqrt_d
        scores = tl.where(nmask[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        qv = tl.load(qv_ptr + (row0 + rn[:, None]) * BLOCK_D + rd[None, :], mask=nmask[:, None], other=0)
        s_v = tl.load(sv_ptr + row0 + rn, mask=nmask, other=0.0)
        v = qv.to(tl.float32) * s_v[:, None]  # dequantized values, fp32
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(out_ptr + (row0 + rm[:, None]) * D + rd[None, :], out, mask=(rm[:, None] < S) & (rd[None, :] < D))


def _quantize(t, block_d):
    rows = t.shape[0] * t.shape[1]
    D = t.shape[2]
    q = torch.empty((rows, block_d), dtype=torch.int8, device=t.device)  # zero-padded to BLOCK_D columns
    s = torch.empty((rows,), dtype=torch.float32, device=t.device)
    r = max(1, min(64, 4096 // block_d))
    if rows:
        _quantize_rows_kernel[(triton.cdiv(rows, r),)](t, q, s, rows, D, ROWS=r, BLOCK_D=block_d)
    return q, s


def attention_w8a8(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    q = query.contiguous().float()
    k = key.contiguous().float()
    v = value.contiguous().float()
    B, S, D = q.shape
    block_d = max(32, triton.next_power_of_2(D))  # int8 tl.dot wants K >= 32; pad with zeros
    qq, sq = _quantize(q, block_d)
    qk, sk = _quantize(k, block_d)
    qv, sv = _quantize(v, block_d)
    out = torch.empty((B, S, D), dtype=torch.float32, device=q.device)
    if B and S:
        bm = min(BLOCK_M, max(16, triton.next_power_of_2(S)))  # small problems (tests) get small tiles
        bn = min(BLOCK_N, max(16, triton.next_power_of_2(S)))
        _attention_kernel[(triton.cdiv(S, bm), B)](
            qq, qk, qv, sq, sk, sv, out, S, D, math.sqrt(D),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=block_d, num_warps=4, num_stages=2,
        )  # fmt: skip
    return out
