"""Expert kernels for LinearAlgebra/matrix_power_eig: Jacobi eigendecomposition of the symmetric A, then V diag(w^k) V^T.

A kernel first symmetrizes A from its lower triangle (as torch.linalg.eigh reads it), S, and a second
shifts it to S + c I with c = ||S||_F >= max |lambda|, which is positive semidefinite. One-sided (Hestenes)
Jacobi on it: pairs of columns are rotated until all are mutually orthogonal, (S + c I) J = W with J
orthogonal; W^T W = J^T (S + c I)^2 J is then diagonal, so J's columns are eigenvectors of S (the shift
keeps eigenvalues of equal magnitude and opposite sign apart) and the eigenvalue of column i is its
Rayleigh quotient j_i . w_i - c. W^T and J^T are kept row-major (a column is a contiguous row); each launch performs one round
of the round-robin tournament (n/2 disjoint pairs, each rotated unless already orthogonal to the
threshold, counted in a flag), and after each sweep of n - 1 rounds the host reads the flag and stops
when no rotation happened (one sync per sweep). A kernel turns the eigenvalues into weights w^k
(integer k by repeated multiplication, so negative eigenvalues work; fractional k as exp(k log w), NaN
for negative w), and one tiled tl.dot kernel (IEEE precision) forms J diag(w^k) J^T. The math runs in
A's dtype (fp32 or fp64); batches run side by side.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.jacobi import NORM_ROWS, ROW_BLOCK, norms_kernel, jacobi, weighted_product


COPY_BLOCK = 1024


@triton.jit
def _symmetrize_kernel(a_ptr, s_ptr, n, BLOCK: tl.constexpr):
    """S[r, c] = A[max(r, c), min(r, c)]: the symmetric matrix of A's lower triangle."""
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n * n
    r, c = offs // n, offs % n
    v = tl.load(a_ptr + b * n * n + tl.maximum(r, c) * n + tl.minimum(r, c), mask=m, other=0.0)
    tl.store(s_ptr + b * n * n + offs, v, mask=m)


@triton.jit
def _shift_kernel(s_ptr, fro2_ptr, n, BLOCK: tl.constexpr):
    """S += ||S||_F I."""
    b = tl.program_id(1).to(tl.int64)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    ptrs = s_ptr + b * n * n + i * n + i
    tl.store(ptrs, tl.load(ptrs, mask=m, other=0.0) + tl.sqrt(tl.load(fro2_ptr + b)), mask=m)


@triton.jit(do_not_specialize=["int_power"])  # a power of 1 would otherwise become a constexpr
def _power_weights_kernel(wt_ptr, jt_ptr, fro2_ptr, f_ptr, n, k, int_power, INTEGER: tl.constexpr,
                          BLOCK: tl.constexpr):  # fmt: skip
    """f_i = lambda_i^k with lambda_i = j_i . w_i - c (the Rayleigh quotient of eigenvector j_i, unshifted)."""
    b = tl.program_id(1).to(tl.int64)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    im = i < n
    acc = tl.zeros([BLOCK], dtype=wt_ptr.dtype.element_ty)
    for c in range(0, n):
        acc += tl.load(wt_ptr + (b * n + i) * n + c, mask=im, other=0.0) * tl.load(jt_ptr + (b * n + i) * n + c,
                                                                                 mask=im, other=0.0)  # fmt: skip
    lam = acc - tl.sqrt(tl.load(fro2_ptr + b))
    if INTEGER:
        p = tl.zeros_like(lam) + 1.0
        base = lam
        e = tl.abs(int_power)
        for _ in range(0, e):
            p = p * base
        if int_power < 0:
            p = 1.0 / p
    else:
        p = tl.exp(k * tl.log(lam))  # NaN for negative lambda, as torch's pow
    tl.store(f_ptr + b * n + i, p, mask=im)


def matrix_power_eig(A: torch.Tensor, k: float, *, out=None) -> torch.Tensor:
    n = A.shape[-1]
    if A.dim() < 2 or A.shape[-2] != n:
        raise RuntimeError(f"matrix_power_eig: expected square matrices, got shape {tuple(A.shape)}")
    batch = A.shape[:-2]
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    a = A.to(dtype).reshape(-1, n, n).contiguous()
    nb = a.shape[0]
    result = torch.empty((nb, n, n), dtype=dtype, device=A.device)
    if nb and n:
        wt = torch.empty_like(a)  # S, symmetric, so its rows are its columns
        _symmetrize_kernel[(triton.cdiv(n * n, COPY_BLOCK), nb)](a, wt, n, BLOCK=COPY_BLOCK)
        norms = torch.empty((nb, n), dtype=dtype, device=A.device)
        fro2 = torch.zeros((nb,), dtype=dtype, device=A.device)
        norms_kernel[(triton.cdiv(n, NORM_ROWS), nb)](wt, norms, fro2, n, n, ROWS=NORM_ROWS, BLOCK=ROW_BLOCK)
        _shift_kernel[(triton.cdiv(n, COPY_BLOCK), nb)](wt, fro2, n, BLOCK=COPY_BLOCK)
        jt = jacobi(wt, norms)
        f = torch.empty((nb, n), dtype=dtype, device=A.device)
        integer = float(k) == int(k)
        _power_weights_kernel[(triton.cdiv(n, ROW_BLOCK), nb)](wt, jt, fro2, f, n, float(k), int(k) if integer else 0,
                                                               INTEGER=integer, BLOCK=ROW_BLOCK)  # fmt: skip
        result = weighted_product(jt, f, jt)
    result = result.reshape(*batch, n, n)
    return out.copy_(result) if out is not None else result
