"""Expert kernels for LinearAlgebra/svd: one-sided (Hestenes) Jacobi SVD, completed by Householder QR when full.

Let M be A when m >= n and A^T otherwise, so its q = min(m, n) = k columns are rotated: pairs of columns
are rotated until all are mutually orthogonal, M J = W with J (k x k) orthogonal; W's column norms are
the singular values, J holds the singular vectors of the short side (V for m >= n, U otherwise) and
W / S those of the long side. W^T and J^T are kept row-major (a column is a contiguous row) and each
launch performs one round of the round-robin tournament: k/2 disjoint pairs, each forming its Gram
entries and, unless already orthogonal to the threshold, applying the rotation that zeroes the
off-diagonal entry to both rows of W^T and J^T, counting it in a flag. After each sweep (k - 1 rounds)
the host reads the flag and stops when no rotation happened (a small host decision, one sync per
sweep). Then a kernel takes the norms, a kernel ranks them (descending, ties by index) and writes S,
and gather kernels write U and Vh in rank order. With full_matrices and m != n, the long side's k
vectors are completed to an orthonormal basis by the last columns of Q from a Householder QR of them
(kbx/experts/householder.py's blocked kernels, Q formed backwards). Rank-deficient inputs would leave zero
vectors where W / S is undefined; the task's matrices have full rank. All fp32.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 106 / 278 / 608 ms at n = 256 / 512 / 1024 against eager's
7.11 / 19.0 / 55.4 ms (cuSOLVER's gesvdj, torch's default driver, a Jacobi SVD too), 0.075x. A sweep is n - 1
launches (255 at n256) of n/2 one-pair programs and a host sync, at most 40 sweeps (MAX_SWEEPS), and a round
moves up to 20 n^2 bytes (counts from the code; sweeps per call not measured); no QR completion at m = n.
Time / (n - 1), a round summed over the sweeps, is 0.41 / 0.54 / 0.59 ms while those bytes grow 16x: launch- and
latency-bound. A block Jacobi (NB columns per program, tl.dot updates) would need about n / NB launches a sweep.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.householder import form_q, householder

from kbx.experts.jacobi import NORM_ROWS, ROW_BLOCK, norms_kernel, jacobi

RANK_BLOCK = 128
COPY_ROWS, COPY_COLS = 32, 32


@triton.jit
def _rank_kernel(norms_ptr, order_ptr, s_ptr, q, k, BLOCK: tl.constexpr):
    """rank_i = #{j: s_j > s_i, or s_j == s_i and j < i}; order[rank_i] = i; S[rank_i] = s_i when rank_i < k."""
    b = tl.program_id(1).to(tl.int64)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    im = i < q
    si = tl.load(norms_ptr + b * q + i, mask=im, other=0.0)
    rank = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, q, BLOCK):
        j = start + tl.arange(0, BLOCK)
        sj = tl.load(norms_ptr + b * q + j, mask=j < q, other=-1.0)
        before = (sj[None, :] > si[:, None]) | ((sj[None, :] == si[:, None]) & (j[None, :] < i[:, None]))
        rank += tl.sum(tl.where(before & (j < q)[None, :], 1, 0), axis=1).to(tl.int32)
    tl.store(order_ptr + b * q + rank, i, mask=im)
    tl.store(s_ptr + b * k + rank, si, mask=im & (rank < k))


@triton.jit
def _gather_kernel(src_ptr, order_ptr, norms_ptr, dst_ptr, q, width, nrows, d_r, d_c, d_b,
                   NORMALIZE: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):  # fmt: skip
    """dst[r, c] (at r * d_r + c * d_c) = src[order[r], c] (divided by its norm), r < nrows, c < width."""
    b = tl.program_id(2).to(tl.int64)
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    c = tl.program_id(1) * COLS + tl.arange(0, COLS)
    rm = r < nrows
    m2 = rm[:, None] & (c < width)[None, :]
    src_row = tl.load(order_ptr + b * q + r, mask=rm, other=0).to(tl.int64)
    v = tl.load(src_ptr + (b * q + src_row[:, None]) * width + c[None, :], mask=m2, other=0.0)
    if NORMALIZE:
        s = tl.load(norms_ptr + b * q + src_row, mask=rm, other=1.0)
        v = v / tl.where(s == 0.0, 1.0, s)[:, None]
    tl.store(dst_ptr + b * d_b + r[:, None].to(tl.int64) * d_r + c[None, :].to(tl.int64) * d_c, v, mask=m2)


def _complete(rows):
    """Orthonormal completion: rows (nb, k, d) with orthonormal rows -> Q (nb, d, d), Q[:, :, k:] orthogonal to them."""
    d = rows.shape[2]
    w = rows.mT.contiguous()  # (nb, d, k), factored in place
    return form_q(householder(w), d)


def svd(A: torch.Tensor, full_matrices: bool = True):
    if A.dim() < 2:
        raise RuntimeError(f"svd: A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    k = min(m, n)
    a = A.to(torch.float32).reshape(-1, m, n)
    nb = a.shape[0]
    tall = m >= n
    wt = a.mT.contiguous() if tall else a.clone()  # rows of W^T are the columns of M (A or A^T): (nb, k, p)
    p = wt.shape[2]
    ucols, vrows = (m, n) if full_matrices else (k, k)
    u = torch.zeros((nb, m, ucols), dtype=torch.float32, device=A.device)
    s = torch.zeros((nb, k), dtype=torch.float32, device=A.device)
    vh = torch.zeros((nb, vrows, n), dtype=torch.float32, device=A.device)
    if nb and k:
        norms = torch.empty((nb, k), dtype=torch.float32, device=A.device)
        jt = jacobi(wt, norms)
        fro2 = torch.zeros((nb,), dtype=torch.float32, device=A.device)
        norms_kernel[(triton.cdiv(k, NORM_ROWS), nb)](wt, norms, fro2, p, k, ROWS=NORM_ROWS, BLOCK=ROW_BLOCK)
        order = torch.empty((nb, k), dtype=torch.int32, device=A.device)
        _rank_kernel[(triton.cdiv(k, RANK_BLOCK), nb)](norms, order, s, k, k, BLOCK=RANK_BLOCK)
        # short side from J (J^T row r -> Vh row r when tall, U column r when wide); long side from W / S
        j_dst, j_strides = (vh, (n, 1, vrows * n)) if tall else (u, (1, ucols, m * ucols))
        w_dst, w_strides = (u, (1, ucols, m * ucols)) if tall else (vh, (n, 1, vrows * n))
        grid = (triton.cdiv(k, COPY_ROWS), triton.cdiv(k, COPY_COLS), nb)
        _gather_kernel[grid](jt, order, norms, j_dst, k, k, k, *j_strides, NORMALIZE=False, ROWS=COPY_ROWS,
                             COLS=COPY_COLS)  # fmt: skip
        grid = (triton.cdiv(k, COPY_ROWS), triton.cdiv(p, COPY_COLS), nb)
        _gather_kernel[grid](wt, order, norms, w_dst, k, p, k, *w_strides, NORMALIZE=True, ROWS=COPY_ROWS,
                             COLS=COPY_COLS)  # fmt: skip
        if full_matrices and m != n:
            if tall:  # U (m x m): its first k columns, then the completion
                u[:, :, k:] = _complete(u[:, :, :k].mT)[:, :, k:]
            else:  # Vh (n x n): its first k rows, then the completion
                vh[:, k:, :] = _complete(vh[:, :k, :])[:, :, k:].mT
    return u.reshape(*batch, m, ucols), s.reshape(*batch, k), vh.reshape(*batch, vrows, n)
