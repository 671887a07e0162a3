"""Expert kernels for Fusion/fused_pairwise_distance_normalize.

1. One pass per input computes each row's scale 1 / max(||row||_p, eps_norm).
2. A tiled all-pairs kernel: each program owns BN rows of x1 by BM rows of x2 and walks the feature
   dimension in BK steps, accumulating |a - b|^p of the normalized rows directly (no Gram-matrix
   expansion, so close pairs keep full fp32 accuracy); then the p-th root and the eps_distance clamp.
"""

import torch
import triton
import triton.language as tl

NORM_ROWS, NORM_COLS = 16, 128
BN, BM, BK = 32, 32, 8


@triton.jit
def _pow_abs(d, p, P_KIND: tl.constexpr):
    a = tl.abs(d)
    if P_KIND == 2:
        return a * a
    elif P_KIND == 1:
        return a
    else:
        return tl.where(a > 0, tl.exp(p * tl.log(a)), 0.0)


@triton.jit
def _root(s, p, P_KIND: tl.constexpr):
    if P_KIND == 2:
        return tl.sqrt(s)
    elif P_KIND == 1:
        return s
    else:
        return tl.where(s > 0, tl.exp(tl.log(s) / p), 0.0)


@triton.jit
def _row_scale_kernel(x_ptr, scale_ptr, R, D, p, eps, P_KIND: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    acc = tl.zeros((ROWS, COLS), dtype=tl.float32)
    for c0 in range(0, D, COLS):
        m = (rows[:, None] < R) & ((c0 + cols) < D)[None, :]
        x = tl.load(x_ptr + rows[:, None] * D + c0 + cols[None, :], mask=m, other=0.0).to(tl.float32)
        acc += _pow_abs(x, p, P_KIND)
    norm = _root(tl.sum(acc, axis=1), p, P_KIND)
    tl.store(scale_ptr + rows, 1.0 / tl.maximum(norm, eps), mask=rows < R)


@triton.jit
def _pair_dist_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, y_ptr, N, M, D, p, eps_d,
                      P_KIND: tl.constexpr, BN: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    ri = tl.program_id(0).to(tl.int64) * BN + tl.arange(0, BN)
    rj = tl.program_id(1).to(tl.int64) * BM + tl.arange(0, BM)
    mi, mj = ri < N, rj < M
    sa = tl.load(sa_ptr + ri, mask=mi, other=0.0)
    sb = tl.load(sb_ptr + rj, mask=mj, other=0.0)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for k0 in range(0, D, BK):
        km = (k0 + ks) < D
        a = tl.load(a_ptr + ri[:, None] * D + k0 + ks[None, :], mask=mi[:, None] & km[None, :], other=0.0)
        b = tl.load(b_ptr + rj[:, None] * D + k0 + ks[None, :], mask=mj[:, None] & km[None, :], other=0.0)
        a = a.to(tl.float32) * sa[:, None]
        b = b.to(tl.float32) * sb[:, None]
        d = a[:, None, :] - b[None, :, :]
        acc += tl.sum(_pow_abs(d, p, P_KIND), axis=2)
    dist = tl.maximum(_root(acc, p, P_KIND), eps_d)
    tl.store(y_ptr + ri[:, None] * M + rj[None, :], dist.to(y_ptr.dtype.element_ty), mask=mi[:, None] & mj[None, :])


def fused_pairwise_distance_normalize(x1, x2, p_norm=2.0, eps_norm=1e-12, eps_distance=1e-06, keepdim=False):
    a, b = x1.contiguous(), x2.contiguous()
    N, D = a.shape
    M = b.shape[0]
    p = float(p_norm)
    kind = 2 if p == 2.0 else (1 if p == 1.0 else 0)
    sa = torch.empty(N, dtype=torch.float32, device=a.device)
    sb = torch.empty(M, dtype=torch.float32, device=a.device)
    for x, s, r in ((a, sa, N), (b, sb, M)):
        if r:
            _row_scale_kernel[(triton.cdiv(r, NORM_ROWS),)](x, s, r, D, p, float(eps_norm), P_KIND=kind,
                                                            ROWS=NORM_ROWS, COLS=NORM_COLS, num_warps=4)  # fmt: skip
    y = torch.empty((N, M), dtype=a.dtype, device=a.device)
    if N and M:
        _pair_dist_kernel[(triton.cdiv(N, BN), triton.cdiv(M, BM))](
            a, b, sa, sb, y, N, M, D, p, float(eps_distance), P_KIND=kind, BN=BN, BM=BM, BK=BK, num_warps=4
        )
    return y.unsqueeze(-1) if keepdim else y
