"""Expert kernels for LinearAlgebra/pseudoinverse_svd: a Jacobi SVD, then V diag(1 / S) U^T as one weighted product.

One-sided (Hestenes) Jacobi: with M (p x q) the matrix whose q = min(m, n) columns are rotated, pairs of
columns are rotated until all are mutually orthogonal, M J = W with J (q x q) orthogonal; W's column norms
are the singular values. W^T and J^T are kept row-major (a column is a contiguous row) and each launch
performs one round of the round-robin tournament: q/2 disjoint pairs, each forming its Gram entries
and, unless already orthogonal to the threshold, applying the rotation that zeroes the off-diagonal
entry to both rows of W^T and J^T, counting it in a flag. After each sweep (q - 1 rounds) the host reads
the flag and stops when no rotation happened (a small host decision, one sync per sweep).
With W = U diag(S), pinv(A) = J diag(1 / s^2) W^T (or W diag(1 / s^2) J^T when M = A^T): a one-program
kernel per matrix finds max(S) and sets the weights 1 / s_i^2 for s_i > rcond max(S) and 0 otherwise,
and one tiled tl.dot kernel (IEEE precision) forms the product. The math runs in A's dtype (fp32 or
fp64); batches run side by side.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 73.8 / 265 / 522 ms at n = 256 / 512 / 1024 against eager's
6.95 / 17.4 / 51.6 ms (cuSOLVER's SVD), 0.08x. One launch per round and q - 1 rounds per sweep (255 at n256),
with a host sync per sweep: if each costs the 20 us of a launch, 73.8 ms is some 3,700 launches, about 14
sweeps; each round also reads both whole matrices (W^T and J^T) once.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.jacobi import NORM_ROWS, ROW_BLOCK, norms_kernel, jacobi, weighted_product


WEIGHT_BLOCK = 1024


@triton.jit
def _pinv_weights_kernel(norms_ptr, f_ptr, q, rcond, BLOCK: tl.constexpr):
    """f_i = 1 / s_i^2 where s_i > rcond * max(s), else 0 (s: the column norms of W for matrix b)."""
    b = tl.program_id(0).to(tl.int64)
    top = tl.max(tl.load(norms_ptr + b * q + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < q, other=0.0), axis=0)
    for start in range(BLOCK, q, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        top = tl.maximum(top, tl.max(tl.load(norms_ptr + b * q + offs, mask=offs < q, other=0.0), axis=0))
    for start in range(0, q, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < q
        s = tl.load(norms_ptr + b * q + offs, mask=m, other=0.0)
        keep = s > rcond * top
        tl.store(f_ptr + b * q + offs, tl.where(keep, 1.0 / tl.where(keep, s * s, 1.0), 0.0), mask=m)


def pseudoinverse_svd(A: torch.Tensor, full_matrices: bool = True, rcond: float = 1e-15, out=None) -> torch.Tensor:
    if A.dim() < 2:
        raise RuntimeError(f"pseudoinverse_svd: A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    a = A.to(dtype).reshape(-1, m, n)
    # rotate the q = min(m, n) columns of M = A (m >= n) or M = A^T; rows of W^T are M's columns
    wt = a.mT.contiguous() if m >= n else a.clone()  # a scratch copy either way
    nb, q = wt.shape[:2]
    if wt.numel() == 0:
        result = torch.zeros((nb, n, m), dtype=dtype, device=A.device)
    else:
        norms = torch.empty((nb, q), dtype=dtype, device=A.device)
        jt = jacobi(wt, norms)
        fro2 = torch.zeros((nb,), dtype=dtype, device=A.device)
        norms_kernel[(triton.cdiv(q, NORM_ROWS), nb)](wt, norms, fro2, wt.shape[2], q, ROWS=NORM_ROWS,
                                                       BLOCK=ROW_BLOCK)  # fmt: skip
        f = torch.empty((nb, q), dtype=dtype, device=A.device)
        _pinv_weights_kernel[(nb,)](norms, f, q, float(rcond), BLOCK=WEIGHT_BLOCK)
        # M = A: A = W J^T, pinv = J diag(1/s^2) W^T; M = A^T: A = J W^T, pinv = W diag(1/s^2) J^T
        x, y = (jt, wt) if m >= n else (wt, jt)
        result = weighted_product(x, f, y)
    result = result.reshape(*batch, n, m)
    return out.copy_(result) if out is not None else result
