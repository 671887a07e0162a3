"""Expert kernels for LinearAlgebra/matrix_power_eig: S^k by repeated squaring for a positive integer k, else a
Jacobi eigendecomposition of the symmetric S, then V diag(w^k) V^T.

A kernel first symmetrizes A from its lower triangle (as torch.linalg.eigh reads it), S. For a positive integer k, V
diag(w^k) V^T is S^k exactly (V orthogonal), so the expert skips the eigendecomposition and forms S^k with ceil(log2
k) + popcount(k) - 1 IEEE-precision products (kbx/experts/matmul.py; one for the perf shapes' k = 2), which is also
closer to the exact power than any fp32 eigensolver. Otherwise (k fractional, zero or negative) a second kernel
shifts it to S + c I with c = ||S||_F >= max |lambda|, which is positive semidefinite. One-sided (Hestenes) Jacobi
on it: pairs of columns are rotated until all are mutually orthogonal, (S + c I) J = W with J orthogonal; W^T W =
J^T (S + c I)^2 J is then diagonal, so J's columns are eigenvectors of S (the shift keeps eigenvalues of equal
magnitude and opposite sign apart) and the eigenvalue of column i is its Rayleigh quotient j_i^T S j_i / j_i^T j_i,
formed from a kept copy of S by a tiled tl.dot kernel, and its weight is divided by j_i^T j_i too. (Not as j_i . w_i
- c: that difference cancels c's leading digits, and c is ~16 max |lambda| at n = 1024; it failed 2,350 of the 1M
elements of A^2 on an H200. And not assuming unit columns: over the sweeps J's columns grow, on an H100 by 2.7e-4 at
n = 1024 and 5.6e-4 at n = 2048, with Triton's approximate or IEEE square roots and divisions alike; unnormalized,
A^2's diagonal was off by 1.8e-3 at n = 2048.) W^T and J^T are kept row-major (a column is a contiguous row); each
launch performs one round of the round-robin tournament (n/2 disjoint pairs, each rotated unless already orthogonal
to the threshold, counted in a flag), and after each sweep of n - 1 rounds the host reads the flag and stops when no
rotation happened (one sync per sweep). A kernel turns the eigenvalues into weights w^k (integer k by repeated
multiplication, so negative eigenvalues work; fractional k as exp(k log w), NaN for negative w), and one tiled
tl.dot kernel (IEEE precision) forms J diag(w^k) J^T. The math runs in A's dtype (fp32 or fp64); batches run side by
side.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), k = 2 (the perf shapes): 0.026 /
0.072 / 0.438 ms at n = 512 / 1024 / 2048 against eager's 13.6 / 10.5 / 25.2 ms (cuSOLVER's symmetric eigensolver,
then two products), 164x and so flagged timing_suspect (over 10x) for review. The review: eager computes an
eigendecomposition that an integer power does not need; one product of 2 n^3 = 17.2 GFLOP at n2048 in 0.438 ms is 39
TFLOP/s of IEEE fp32. The eigendecomposition route (fractional, zero or negative k) took 162 / 667 / 2,314 ms on an
H100 (2026-11-27), 0.025x: Jacobi sweeps of n - 1 launches each.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.jacobi import NORM_ROWS, ROW_BLOCK, norms_kernel, jacobi, weighted_product
from kbx.experts.matmul import product


COPY_BLOCK = 1024
RQ_ROWS, RQ_COLS, RQ_K = 32, 64, 32  # tiles of the Rayleigh-quotient kernel


@triton.jit
def _symmetrize_kernel(a_ptr, s_ptr, copy_ptr, n, BLOCK: tl.constexpr):
    """S[r, c] = A[max(r, c), min(r, c)]: the symmetric matrix of A's lower triangle, written twice."""
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n * n
    r, c = offs // n, offs % n
    v = tl.load(a_ptr + b * n * n + tl.maximum(r, c) * n + tl.minimum(r, c), mask=m, other=0.0)
    tl.store(s_ptr + b * n * n + offs, v, mask=m)
    tl.store(copy_ptr + b * n * n + offs, v, mask=m)


@triton.jit
def _rayleigh_kernel(jt_ptr, s_ptr, lam_ptr, jj_ptr, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """lambda_i = j_i^T S j_i / j_i^T j_i for the rows j_i of J^T (sums over column tiles of (J^T S)[i, c] J^T[i, c]
    and J^T[i, c]^2), and j_i^T j_i."""
    b = tl.program_id(1).to(tl.int64)
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    im = i < n
    jt = jt_ptr + b * n * n
    s = s_ptr + b * n * n
    lam = tl.zeros([BM], dtype=lam_ptr.dtype.element_ty)
    jj = tl.zeros([BM], dtype=lam_ptr.dtype.element_ty)
    for c0 in range(0, n, BN):
        c = c0 + tl.arange(0, BN)
        cm = c < n
        acc = tl.zeros([BM, BN], dtype=lam_ptr.dtype.element_ty)
        for k0 in range(0, n, BK):
            k = k0 + tl.arange(0, BK)
            km = k < n
            x = tl.load(jt + i[:, None] * n + k[None, :], mask=im[:, None] & km[None, :], other=0.0)
            y = tl.load(s + k[:, None] * n + c[None, :], mask=km[:, None] & cm[None, :], other=0.0)
            acc += tl.dot(x, y, input_precision="ieee")
        own = tl.load(jt + i[:, None] * n + c[None, :], mask=im[:, None] & cm[None, :], other=0.0)
        lam += tl.sum(acc * own, axis=1)
        jj += tl.sum(own * own, axis=1)
    jj = tl.where(im, jj, 1.0)
    tl.store(lam_ptr + b * n + i, lam / jj, mask=im)
    tl.store(jj_ptr + b * n + i, jj, mask=im)


@triton.jit
def _shift_kernel(s_ptr, fro2_ptr, n, BLOCK: tl.constexpr):
    """S += ||S||_F I."""
    b = tl.program_id(1).to(tl.int64)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    ptrs = s_ptr + b * n * n + i * n + i
    tl.store(ptrs, tl.load(ptrs, mask=m, other=0.0) + tl.sqrt(tl.load(fro2_ptr + b)), mask=m)


@triton.jit(do_not_specialize=["int_power"])  # a power of 1 would otherwise become a constexpr
def _power_weights_kernel(lam_ptr, jj_ptr, f_ptr, n, k, int_power, INTEGER: tl.constexpr, BLOCK: tl.constexpr):
    """f_i = lambda_i^k / j_i^T j_i, so that j_i f_i j_i^T is lambda_i^k times the projector on j_i."""
    b = tl.program_id(1).to(tl.int64)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    im = i < n
    lam = tl.load(lam_ptr + b * n + i, mask=im, other=1.0)
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
    tl.store(f_ptr + b * n + i, p / tl.load(jj_ptr + b * n + i, mask=im, other=1.0), mask=im)


def _integer_power(s: torch.Tensor, k: int) -> torch.Tensor:
    """s^k for a positive integer k by repeated squaring (binary exponentiation), batched."""
    result, base = None, s
    while True:
        if k & 1:
            result = base if result is None else product(result, base)
        k >>= 1
        if not k:
            return result
        base = product(base, base)


def matrix_power_eig(A: torch.Tensor, k: float, *, out=None) -> torch.Tensor:
    n = A.shape[-1]
    if A.dim() < 2 or A.shape[-2] != n:
        raise RuntimeError(f"matrix_power_eig: expected square matrices, got shape {tuple(A.shape)}")
    batch = A.shape[:-2]
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    a = A.to(dtype).reshape(-1, n, n).contiguous()
    nb = a.shape[0]
    result = torch.empty((nb, n, n), dtype=dtype, device=A.device)
    integer = float(k) == int(k)
    if nb and n and integer and int(k) >= 1:
        s = torch.empty_like(a)
        _symmetrize_kernel[(triton.cdiv(n * n, COPY_BLOCK), nb)](a, s, s, n, BLOCK=COPY_BLOCK)
        result = _integer_power(s, int(k))
    elif nb and n:
        wt = torch.empty_like(a)  # S, symmetric, so its rows are its columns; shifted and rotated in place
        s = torch.empty_like(a)  # S, kept for the Rayleigh quotients
        _symmetrize_kernel[(triton.cdiv(n * n, COPY_BLOCK), nb)](a, wt, s, n, BLOCK=COPY_BLOCK)
        norms = torch.empty((nb, n), dtype=dtype, device=A.device)
        fro2 = torch.zeros((nb,), dtype=dtype, device=A.device)
        norms_kernel[(triton.cdiv(n, NORM_ROWS), nb)](wt, norms, fro2, n, n, ROWS=NORM_ROWS, BLOCK=ROW_BLOCK)
        _shift_kernel[(triton.cdiv(n, COPY_BLOCK), nb)](wt, fro2, n, BLOCK=COPY_BLOCK)
        jt = jacobi(wt, norms)
        lam = torch.empty((nb, n), dtype=dtype, device=A.device)
        jj = torch.empty((nb, n), dtype=dtype, device=A.device)
        _rayleigh_kernel[(triton.cdiv(n, RQ_ROWS), nb)](jt, s, lam, jj, n, BM=RQ_ROWS, BN=RQ_COLS, BK=RQ_K)
        f = torch.empty((nb, n), dtype=dtype, device=A.device)
        _power_weights_kernel[(triton.cdiv(n, ROW_BLOCK), nb)](lam, jj, f, n, float(k), int(k) if integer else 0,
                                                               INTEGER=integer, BLOCK=ROW_BLOCK)  # fmt: skip
        result = weighted_product(jt, f, jt)
    result = result.reshape(*batch, n, n)
    return out.copy_(result) if out is not None else result
