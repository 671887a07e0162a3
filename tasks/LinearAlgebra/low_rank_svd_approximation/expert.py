"""Expert kernels for LinearAlgebra/low_rank_svd_approximation: a Jacobi SVD, then the rank-k sum as one product.

One-sided (Hestenes) Jacobi: with M (p x q) the matrix whose q = min(m, n) columns are rotated, pairs of
columns are rotated until all are mutually orthogonal, M J = W with J (q x q) orthogonal; W's column norms
are the singular values. W^T and J^T are kept row-major (a column is a contiguous row) and each launch
performs one round of the round-robin tournament: q/2 disjoint pairs, each forming its Gram entries
and, unless already orthogonal to the threshold, applying the rotation that zeroes the off-diagonal
entry to both rows of W^T and J^T, counting it in a flag. After each sweep (q - 1 rounds) the host reads
the flag and stops when no rotation happened (a small host decision, one sync per sweep).
A kernel ranks the singular values (descending, ties by index) and weights the top k by 1, the rest by
0; the rank-k approximation sum_{top k} s_i u_i v_i^T = sum_i f_i w_i j_i^T is then one tiled tl.dot
kernel in IEEE fp32 (W J^T, or J W^T when M = A^T). Batches run side by side.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 311 / 576 / 908 ms at n = 512 / 1024 / 1536, k = 50, against
eager's 12.8 / 38.6 / 70.4 ms (cuSOLVER's gesvdj with full U and Vh, then two cuBLAS products), 0.060x. A sweep is
n - 1 launches (511 at n512) of n/2 one-pair programs and a host sync, at most 40 sweeps (MAX_SWEEPS), and a round
moves up to 20 n^2 bytes (counts from the code; sweeps per call not measured). Time / (n - 1) is 0.61 / 0.56 /
0.59 ms while those bytes grow 9x: launch- and latency-bound. Only k of n singular triplets are needed, past a
gap (1-2 against below 0.25): a subspace iteration on n x (k + a few) blocks with tl.dot would skip the sweeps.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.jacobi import NORM_ROWS, ROW_BLOCK, norms_kernel, jacobi, weighted_product


RANK_BLOCK = 128


@triton.jit
def _topk_kernel(norms_ptr, f_ptr, q, k, BLOCK: tl.constexpr):
    """f_i = 1 when rank_i < k, else 0; rank_i = #{j: s_j > s_i, or s_j == s_i and j < i}."""
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
    tl.store(f_ptr + b * q + i, tl.where(rank < k, 1.0, 0.0).to(f_ptr.dtype.element_ty), mask=im)


def low_rank_svd_approximation(A: torch.Tensor, k: int, *, full_matrices: bool = True, out=None) -> torch.Tensor:
    if A.dim() < 2:
        raise RuntimeError(f"low_rank_svd_approximation: A must have at least 2 dimensions, got {tuple(A.shape)}")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    a = A.to(torch.float32).reshape(-1, m, n)
    # rotate the q = min(m, n) columns of M = A (m >= n) or M = A^T; rows of W^T are M's columns
    wt = a.mT.contiguous() if m >= n else a.clone()  # a scratch copy either way
    nb, q = wt.shape[:2]
    if wt.numel() == 0:
        result = torch.zeros((nb, m, n), dtype=torch.float32, device=A.device)
    else:
        norms = torch.empty((nb, q), dtype=torch.float32, device=A.device)
        jt = jacobi(wt, norms)
        norms_kernel[(triton.cdiv(q, NORM_ROWS), nb)](wt, norms, torch.zeros((nb,), dtype=torch.float32,
                                                                                device=A.device),
                                                       wt.shape[2], q, ROWS=NORM_ROWS, BLOCK=ROW_BLOCK)  # fmt: skip
        f = torch.empty((nb, q), dtype=torch.float32, device=A.device)
        _topk_kernel[(triton.cdiv(q, RANK_BLOCK), nb)](norms, f, q, int(k), BLOCK=RANK_BLOCK)
        x, y = (wt, jt) if m >= n else (jt, wt)  # A = W J^T when M = A, A = J W^T when M = A^T
        result = weighted_product(x, f, y)
    result = result.reshape(*batch, m, n)
    return out.copy_(result) if out is not None else result
