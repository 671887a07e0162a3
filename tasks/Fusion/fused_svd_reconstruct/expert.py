"""Expert kernels for Fusion/fused_svd_reconstruct: a Jacobi SVD of A, then U diag(S) Vh as one weighted product.

One-sided (Hestenes) Jacobi: with M (p x q) the matrix whose q = min(m, n) columns are rotated, pairs of
columns are rotated until all are mutually orthogonal, M J = W with J (q x q) orthogonal; W's column norms
are the singular values. W^T and J^T are kept row-major (a column is a contiguous row) and each launch
performs one round of the round-robin tournament: q/2 disjoint pairs, each forming its Gram entries
and, unless already orthogonal to the threshold, applying the rotation that zeroes the off-diagonal
entry to both rows of W^T and J^T, counting it in a flag. After each sweep (q - 1 rounds) the host reads
the flag and stops when no rotation happened (a small host decision, one sync per sweep).
The reconstruction U diag(S) Vh = W J^T (or J W^T when M = A^T) is one tiled tl.dot kernel in IEEE
fp32. (The exact answer is A itself; the task times the factor-and-reconstruct pipeline.)

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 113 / 288 / 531 ms at n = 256 / 512 / 1024 against eager's
7.27 / 19.8 / 55.8 ms (cuSOLVER's gesvdj, torch's default SVD driver, then two cuBLAS products), 0.077x. The
sweeps are nearly all of it: LinearAlgebra/svd's expert, the same sweeps on same-sized uniform inputs, takes 106 /
278 / 608 ms. A sweep is n - 1 launches (255 at n256) of n/2 one-pair programs and a host sync, at most 40 (counts
from the code; sweeps per call not measured); time / (n - 1) is 0.44 / 0.56 / 0.52 ms at all three n: launch- and
latency-bound. A block Jacobi (NB columns per program, tl.dot updates) would need about n / NB launches a sweep.
"""

import torch

from kbx.experts.jacobi import jacobi, weighted_product


def fused_svd_reconstruct(A: torch.Tensor) -> torch.Tensor:
    if A.dim() != 2:
        raise RuntimeError(f"fused_svd_reconstruct: expected a 2-D matrix, got shape {tuple(A.shape)}")
    m, n = A.shape
    a = A.to(torch.float32)
    # rotate the q = min(m, n) columns of M = A (m >= n) or M = A^T; rows of W^T are M's columns
    wt = (a.mT.contiguous() if m >= n else a.clone()).reshape(1, min(m, n), max(m, n))  # a scratch copy
    if wt.numel() == 0:
        return torch.zeros((m, n), dtype=torch.float32, device=A.device)
    norms = torch.empty(wt.shape[:2], dtype=torch.float32, device=A.device)
    jt = jacobi(wt, norms)
    ones = torch.ones(wt.shape[:2], dtype=torch.float32, device=A.device)
    # A = W J^T when M = A, A = J W^T when M = A^T
    x, y = (wt, jt) if m >= n else (jt, wt)
    return weighted_product(x, ones, y).reshape(m, n)
