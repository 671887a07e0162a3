"""Expert kernel for Fusion/attention: flash-attention style forward. Each program owns BLOCK_M query
rows of one (batch, head), streams K/V in BLOCK_N tiles, and keeps an online softmax (running max and
sum, fp32) so the S x S score matrix never reaches memory. Both products accumulate in fp32; the
probabilities are cast to V's dtype for the second tl.dot. Causal programs stop at the diagonal tile.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N = 64, 64
LOG2E = 1.4426950408889634


@triton.jit
def _attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S_q, S_k, D, qk_scale, CAUSAL: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q_base = q_ptr + bh * S_q * D
    kv_off = bh * S_k * D
    q = tl.load(q_base + rm[:, None] * D + rd[None, :], mask=(rm[:, None] < S_q) & (rd[None, :] < D), other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    hi = S_k
    if CAUSAL:
        hi = tl.minimum(S_k, (pid_m + 1) * BLOCK_M)
    for n0 in range(0, hi, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        kv_mask = (rn[:, None] < S_k) & (rd[None, :] < D)
        k = tl.load(k_ptr + kv_off + rn[:, None] * D + rd[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # scores in log2 units
        valid = rn[None, :] < S_k
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_off + rn[:, None] * D + rd[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    o_mask = (rm[:, None] < S_q) & (rd[None, :] < D)
    tl.store(o_ptr + bh * S_q * D + rm[:, None] * D + rd[None, :], out.to(o_ptr.dtype.element_ty), mask=o_mask)


def attention(q, k, v, causal: bool = False, softmax_scale=None, *, out=None) -> torch.Tensor:
    b, h, s_q, d = q.shape
    s_k = k.shape[-2]
    scale = softmax_scale if softmax_scale is not None else d**-0.5
    qc, kc, vc = q.contiguous(), k.contiguous(), v.contiguous()
    y = torch.empty((b, h, s_q, d), dtype=q.dtype, device=q.device)
    if y.numel():
        grid = (triton.cdiv(s_q, BLOCK_M), b * h)
        _attn_fwd_kernel[grid](qc, kc, vc, y, s_q, s_k, d, float(scale) * LOG2E, CAUSAL=bool(causal),
                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=max(16, triton.next_power_of_2(d)),
                               num_warps=4)  # fmt: skip
    if out is not None:
        out.copy_(y.to(out.dtype))
        return out
    return y
