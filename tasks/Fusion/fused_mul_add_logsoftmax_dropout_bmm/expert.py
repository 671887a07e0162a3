"""Expert kernels for Fusion/fused_mul_add_logsoftmax_dropout_bmm.

Kernel 1 (rows of the (B*M, N) view, softmax dim moved last): S = a * b + c is formed on the fly,
an online max / sum pass gives logsumexp, and a second pass writes D = dropout(S - lse) using
tl.rand(seed, flat index) (kept with probability 1 - p, scaled by 1 / (1 - p)). Kernel 2 is a tiled
batched matmul D @ mat2 with tl.dot and fp32 accumulation.
"""

import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024
TILE = 4096
BM, BN, BK = 64, 64, 32


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _logsoftmax_dropout_kernel(a_ptr, b_ptr, c_ptr, d_ptr, n_rows, n_cols, p, scale, seed, TRAINING: tl.constexpr,
                               ROWS: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < n_rows
    base = rows[:, None] * n_cols
    cols = tl.arange(0, BLOCK)[None, :]
    m = tl.full([ROWS, BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([ROWS, BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        mask = row_ok[:, None] & (idx < n_cols)
        a = tl.load(a_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(c_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
        x = tl.where(mask, a * b + c, float("-inf"))
        m_new = tl.maximum(m, x)
        sc = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * sc + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    mx = tl.max(m, axis=1)
    lse = mx + tl.log(tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mx[:, None])), axis=1))
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        mask = row_ok[:, None] & (idx < n_cols)
        a = tl.load(a_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(c_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
        y = a * b + c - lse[:, None]
        if TRAINING:
            r = tl.rand(seed, (base + idx).to(tl.int32))
            y = tl.where(r >= p, y * scale, 0.0)
        tl.store(d_ptr + base + idx, y.to(d_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bmm_kernel(d_ptr, w_ptr, y_ptr, M, N, P, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    n_pn = tl.cdiv(P, BN)
    rm = (pid // n_pn) * BM + tl.arange(0, BM)
    rn = (pid % n_pn) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    d_base = d_ptr + batch * M * N
    w_base = w_ptr + batch * N * P
    acc = tl.zeros([BM, BN], tl.float32)
    for k0 in range(0, N, BK):
        kk = k0 + rk
        d = tl.load(d_base + rm[:, None] * N + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < N), other=0.0)
        w = tl.load(w_base + kk[:, None] * P + rn[None, :], mask=(kk[:, None] < N) & (rn[None, :] < P), other=0.0)
        acc = tl.dot(d, w, acc, input_precision="ieee")  # exact fp32: outlier rows exceed the TF32 allowance
    tl.store(y_ptr + batch * M * P + rm[:, None] * P + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < P))  # fmt: skip


def fused_mul_add_logsoftmax_dropout_bmm(input1, input2, other, mat2, p=0.5, training=True, inplace=False, dim=-1,
                                         *, out=None):  # fmt: skip
    shape = torch.broadcast_shapes(input1.shape, input2.shape, other.shape)
    d = dim % len(shape)
    moved = d != len(shape) - 1

    def prep(t):
        t = t.expand(shape)
        return t.movedim(d, -1).contiguous() if moved else t.contiguous()

    a, b, c = prep(input1), prep(input2), prep(other)
    n_cols = a.shape[-1]
    n_rows = a.numel() // max(n_cols, 1)
    dbuf = torch.empty_like(a)
    use_dropout = bool(training) and p > 0.0
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if use_dropout else 0
    if a.numel():
        block = min(triton.next_power_of_2(n_cols), MAX_BLOCK)
        rows = max(1, min(TILE // block, triton.next_power_of_2(n_rows)))
        _logsoftmax_dropout_kernel[(triton.cdiv(n_rows, rows),)](a, b, c, dbuf, n_rows, n_cols, float(p), scale, seed,
                                                                 TRAINING=use_dropout, ROWS=rows, BLOCK=block,
                                                                 num_warps=8)  # fmt: skip
    if moved:
        dbuf = dbuf.movedim(-1, d).contiguous()
    w = mat2.contiguous()
    B, M, N = dbuf.shape
    P = w.shape[-1]
    y = torch.empty((B, M, P), dtype=dbuf.dtype, device=dbuf.device)
    if y.numel():
        _bmm_kernel[(triton.cdiv(M, BM) * triton.cdiv(P, BN), B)](dbuf, w, y, M, N, P, BM=BM, BN=BN, BK=BK,
                                                                  num_warps=4)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
