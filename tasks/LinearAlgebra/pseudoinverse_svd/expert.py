"""Expert kernels for LinearAlgebra/pseudoinverse_svd: Newton-Schulz iterations where every singular value lies above
the cutoff, else a Jacobi SVD, then V diag(1 / S) U^T as one weighted product.

Newton-Schulz first: X_0 = alpha A^T with alpha = 1 / (||A||_1 ||A||_inf) <= 1 / s_max^2, then
X <- 2 X - (X A) X (or 2 X - X (A X) when A is wide, the smaller product), two IEEE-precision products a
step (kbx/experts/matmul.py). It keeps X = V diag(x_i) U^T with each singular residual 1 - s_i x_i squared
every step, so trace(X A) (or trace(A X)) = q - sum of the residuals, q = min(m, n): a kernel sums the
trace and the host reads q - trace after each step (one sync a step). Once it is below CONVERGED, each
residual is below it too, and the step that found it and FINISH_STEPS more take them under the dtype's rounding.
Then X is the pseudoinverse with every singular value inverted, which is the task's answer exactly when every s_i
exceeds rcond s_max: converging within MAX_NEWTON_STEPS proves s_i^2 / s_max^2 > alpha s_i^2 > 4.6 / 2^MAX_NEWTON_STEPS,
s_i > 6.6e-5 s_max, so it is used only when rcond is below that (NEWTON_RCOND_LIMIT). A rank-deficient or
ill-conditioned A does not converge in time and takes the SVD route below, as do the tests' singular and
rank-4 cases. On the CPU (torch, fp32, the perf inputs) 15 / 16 / 17 steps at n = 256 / 512 / 1024 were as close
to the float64 inverse as torch.linalg.pinv's fp32 SVD (about 1e-6).

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

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 1.36 / 1.48 / 3.46 ms at n = 256
/ 512 / 1024 against eager's 6.35 / 17.2 / 51.0 ms (cuSOLVER's SVD), 9.3x, by Newton-Schulz (15-17 steps of two
products at these sizes, one host sync a step); at n256 and n512 the steps' launches and syncs, not the products,
set the time. The Jacobi route took 73.8 / 265 / 522 ms on an H100 (2026-11-27), 0.08x.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.jacobi import NORM_ROWS, ROW_BLOCK, norms_kernel, jacobi, weighted_product
from kbx.experts.matmul import product


WEIGHT_BLOCK = 1024
MAX_NEWTON_STEPS = 30
NEWTON_RCOND_LIMIT = 6.6e-5  # sqrt(4.6 / 2^MAX_NEWTON_STEPS): the smallest s_i / s_max a converged run proves
CONVERGED = 1e-2  # q - trace below which every singular residual is small enough to finish
# steps after the one that finds the residual below 1e-2 (which squares it to 1e-4): 1e-8 and 1e-16 for fp32, on to
# 1e-32 for fp64, one step past each dtype's rounding (the CPU prototype's count)
FINISH_STEPS = {torch.float32: 2, torch.float64: 3}
NORM_BLOCK = 64  # rows and columns per program of the norm and start kernels


@triton.jit
def _abs_sums_kernel(a_ptr, colsum_ptr, rowmax_ptr, m, n, BLOCK: tl.constexpr):
    """Column sums of |A| (accumulated into colsum) and the largest row sum (into rowmax), per matrix."""
    b = tl.program_id(1).to(tl.int64)
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rm = rows < m
    row_sums = tl.zeros([BLOCK], dtype=a_ptr.dtype.element_ty)
    for c0 in range(0, n, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        cm = cols < n
        x = tl.abs(tl.load(a_ptr + b * m * n + rows[:, None] * n + cols[None, :], mask=rm[:, None] & cm[None, :],
                           other=0.0))  # fmt: skip
        row_sums += tl.sum(x, axis=1)
        tl.atomic_add(colsum_ptr + b * n + cols, tl.sum(x, axis=0), mask=cm)
    tl.atomic_max(rowmax_ptr + b, tl.max(row_sums, axis=0))


@triton.jit
def _start_kernel(a_ptr, colsum_ptr, rowmax_ptr, x_ptr, m, n, BLOCK: tl.constexpr):
    """X_0 = A^T / (||A||_1 ||A||_inf) (0 for a zero matrix), (n, m) per matrix."""
    b = tl.program_id(2).to(tl.int64)
    top = tl.zeros([BLOCK], dtype=a_ptr.dtype.element_ty)
    for c0 in range(0, n, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        top = tl.maximum(top, tl.load(colsum_ptr + b * n + cols, mask=cols < n, other=0.0))
    bound = tl.max(top, axis=0) * tl.load(rowmax_ptr + b)
    alpha = tl.where(bound > 0.0, 1.0 / tl.where(bound > 0.0, bound, 1.0), 0.0)
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # rows of X, columns of A
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)  # columns of X, rows of A
    mask = (r[:, None] < n) & (c[None, :] < m)
    v = tl.load(a_ptr + b * m * n + c[None, :] * n + r[:, None], mask=mask, other=0.0)
    tl.store(x_ptr + b * n * m + r[:, None] * m + c[None, :], alpha * v, mask=mask)


@triton.jit
def _residual_kernel(s_ptr, residual_ptr, q, BLOCK: tl.constexpr):
    """residual = max over the matrices of q - trace(S[b]) for the (q, q) products S."""
    b = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=s_ptr.dtype.element_ty)
    for i0 in range(0, q, BLOCK):
        i = i0 + tl.arange(0, BLOCK)
        acc += tl.load(s_ptr + b * q * q + i * (q + 1), mask=i < q, other=0.0)
    tl.atomic_max(residual_ptr, q - tl.sum(acc, axis=0))


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


def _newton_schulz(a: torch.Tensor) -> torch.Tensor | None:
    """The pseudoinverse of every matrix of a (nb, m, n) with all singular values inverted, or None if the
    iteration did not converge within MAX_NEWTON_STEPS (a rank-deficient or ill-conditioned matrix)."""
    nb, m, n = a.shape
    q = min(m, n)
    colsum = torch.zeros((nb, n), dtype=a.dtype, device=a.device)
    rowmax = torch.zeros((nb,), dtype=a.dtype, device=a.device)
    _abs_sums_kernel[(triton.cdiv(m, NORM_BLOCK), nb)](a, colsum, rowmax, m, n, BLOCK=NORM_BLOCK)
    x = torch.empty((nb, n, m), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(n, NORM_BLOCK), triton.cdiv(m, NORM_BLOCK), nb)
    _start_kernel[grid](a, colsum, rowmax, x, m, n, BLOCK=NORM_BLOCK)
    residual = torch.zeros((1,), dtype=a.dtype, device=a.device)
    for _ in range(MAX_NEWTON_STEPS):
        s, x = _newton_step(a, x)
        residual.zero_()
        _residual_kernel[(nb,)](s, residual, q, BLOCK=WEIGHT_BLOCK)  # of the X before this step
        if float(residual.item()) < CONVERGED:
            for _ in range(FINISH_STEPS[a.dtype]):
                x = _newton_step(a, x)[1]
            return x
    return None


def _newton_step(a: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(S, X') for X' = 2 X - S X with S = X A (A tall or square) or X' = 2 X - X S with S = A X (A wide): the
    smaller product, whose trace is the sum of X's singular values times A's."""
    if a.shape[1] >= a.shape[2]:
        s = product(x, a)
        return s, product(s, x, x, 2.0, -1.0)
    s = product(a, x)
    return s, product(x, s, x, 2.0, -1.0)


def _svd_pinv(a: torch.Tensor, rcond: float) -> torch.Tensor:
    """The pseudoinverse through a Jacobi SVD, singular values at most rcond * max(S) set to zero."""
    nb, m, n = a.shape
    # rotate the q = min(m, n) columns of M = A (m >= n) or M = A^T; rows of W^T are M's columns
    wt = a.mT.contiguous() if m >= n else a.clone()  # a scratch copy either way
    q = wt.shape[1]
    norms = torch.empty((nb, q), dtype=a.dtype, device=a.device)
    jt = jacobi(wt, norms)
    fro2 = torch.zeros((nb,), dtype=a.dtype, device=a.device)
    norms_kernel[(triton.cdiv(q, NORM_ROWS), nb)](wt, norms, fro2, wt.shape[2], q, ROWS=NORM_ROWS,
                                                   BLOCK=ROW_BLOCK)  # fmt: skip
    f = torch.empty((nb, q), dtype=a.dtype, device=a.device)
    _pinv_weights_kernel[(nb,)](norms, f, q, float(rcond), BLOCK=WEIGHT_BLOCK)
    # M = A: A = W J^T, pinv = J diag(1/s^2) W^T; M = A^T: A = J W^T, pinv = W diag(1/s^2) J^T
    x, y = (jt, wt) if m >= n else (wt, jt)
    return weighted_product(x, f, y)


def pseudoinverse_svd(A: torch.Tensor, full_matrices: bool = True, rcond: float = 1e-15, out=None) -> torch.Tensor:
    if A.dim() < 2:
        raise RuntimeError(f"pseudoinverse_svd: A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    a = A.to(dtype).reshape(-1, m, n).contiguous()
    if a.numel() == 0:
        result = torch.zeros((a.shape[0], n, m), dtype=dtype, device=A.device)
    else:
        result = _newton_schulz(a) if rcond < NEWTON_RCOND_LIMIT else None
        if result is None:
            result = _svd_pinv(a, rcond)
    result = result.reshape(*batch, n, m)
    return out.copy_(result) if out is not None else result
