"""Expert kernels for Fusion/fused_cholesky_solve: blocked right-looking Cholesky, then blocked triangular solves.

Factorization, per block column of width NB (A is overwritten by L in its lower part):
1. one program factors the NB x NB diagonal block in registers (column by column, masked rank-1
   updates) and inverts the triangular factor there (row by row); the inverse's transpose is kept;
2. a tiled kernel forms the panel below, L21 = A21 L11^-T, as a matrix product with that inverse;
3. a tiled kernel updates the trailing lower triangle, A22 -= L21 L21^T (tiles above the diagonal exit).
The solves reuse the inverted diagonal blocks: forward (L y = b), each step computes y_k = L_kk^-1 b_k
with one launch and subtracts L_ik y_k from the rows below with another; backward (L^T x = y) runs the
same two kernels over L^T (strides swapped) from the last block up. Products use tl.dot in IEEE fp32
(TF32 would lose the accuracy the factorization needs). Exactly the lower triangle of A is read.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 2.13 / 5.44 / 11.6 / 26.9 ms at n = 1024 / 2048 / 4096 /
8192 (one right-hand side) against eager's 0.704 / 1.16 / 2.61 / 10.5 ms (cuSOLVER's potrf, then potrs), 0.28x.
7 n / 64 - 4 launches (108 at n1024, 892 at n8192; per 64-column block 3 to factor, 4 to solve), 133 (n1024) to
210 us (n8192) per block. Each block waits on one-program steps: the diagonal kernel (64 dependent column steps to
factor, 64 row steps to invert) and, per solve direction, a block solve of the one right-hand side padded to 16
columns for tl.dot. Look-ahead (the next diagonal block factored beside the trailing update) would shorten it.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.cholesky import TILE, cholesky_in_place

GPU_NB, CPU_NB = 64, 32  # block width; the CPU interpreter also exercises the multi-block path on small cases
RHS_BLOCK = 16  # right-hand-side columns per program (tl.dot needs at least 16)


@triton.jit
def _block_solve_kernel(inv_ptr, b_ptr, n, k, k0, TRANS: tl.constexpr, NB: tl.constexpr, RB: tl.constexpr):
    """b[k0:k0+NB] = X b[k0:k0+NB] with X = inv(L_kk) (or its transpose), for a block of rhs columns."""
    idx = tl.arange(0, NB)
    cols = tl.program_id(0) * RB + tl.arange(0, RB)
    rows = k0 + idx
    m2 = (rows < n)[:, None] & (cols < k)[None, :]
    base = inv_ptr + (k0 // NB) * NB * NB
    if TRANS:
        x = tl.load(base + idx[None, :] * NB + idx[:, None])
    else:
        x = tl.load(base + idx[:, None] * NB + idx[None, :])
    ptrs = b_ptr + rows[:, None].to(tl.int64) * k + cols[None, :]
    y = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, tl.dot(x, y, input_precision="ieee"), mask=m2)


@triton.jit
def _rhs_update_kernel(l_ptr, s_r, s_c, b_ptr, n, k, k0, r0, r1, NB: tl.constexpr, TILE: tl.constexpr,
                       RB: tl.constexpr):  # fmt: skip
    """b[r0:r1] -= T[r0:r1, k0:k0+NB] b[k0:k0+NB], where T[r, c] = l[r * s_r + c * s_c] (L or L^T)."""
    rows = r0 + tl.program_id(0) * TILE + tl.arange(0, TILE)
    cols = tl.program_id(1) * RB + tl.arange(0, RB)
    idx = k0 + tl.arange(0, NB)
    rm = rows < r1
    cm = cols < k
    im = idx < n
    t = tl.load(l_ptr + rows[:, None].to(tl.int64) * s_r + idx[None, :].to(tl.int64) * s_c,
                mask=rm[:, None] & im[None, :], other=0.0)  # fmt: skip
    y = tl.load(b_ptr + idx[:, None].to(tl.int64) * k + cols[None, :], mask=im[:, None] & cm[None, :], other=0.0)
    ptrs = b_ptr + rows[:, None].to(tl.int64) * k + cols[None, :]
    m2 = rm[:, None] & cm[None, :]
    acc = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, acc - tl.dot(t, y, input_precision="ieee"), mask=m2)


def _cholesky_solve_in_place(low, inv, b, nb):
    """b <- (L L^T)^-1 b for L the lower triangle of low (n x n) and b (n, k), both contiguous."""
    n, k = b.shape
    grid_b = (triton.cdiv(k, RHS_BLOCK),)
    starts = list(range(0, n, nb))
    for k0 in starts:  # forward: L y = b
        _block_solve_kernel[grid_b](inv, b, n, k, k0, TRANS=False, NB=nb, RB=RHS_BLOCK)
        if n - k0 - nb > 0:
            grid = (triton.cdiv(n - k0 - nb, TILE), triton.cdiv(k, RHS_BLOCK))
            _rhs_update_kernel[grid](low, n, 1, b, n, k, k0, k0 + nb, n, NB=nb, TILE=TILE, RB=RHS_BLOCK)
    for k0 in reversed(starts):  # backward: L^T x = y
        _block_solve_kernel[grid_b](inv, b, n, k, k0, TRANS=True, NB=nb, RB=RHS_BLOCK)
        if k0 > 0:
            grid = (triton.cdiv(k0, TILE), triton.cdiv(k, RHS_BLOCK))
            _rhs_update_kernel[grid](low, 1, n, b, n, k, k0, 0, k0, NB=nb, TILE=TILE, RB=RHS_BLOCK)


def fused_cholesky_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if A.dim() != 2 or A.shape[0] != A.shape[1] or b.dim() != 2 or b.shape[0] != A.shape[0]:
        raise RuntimeError(f"fused_cholesky_solve: expected A (n, n) and b (n, k), got {tuple(A.shape)} and "
                           f"{tuple(b.shape)}")  # fmt: skip
    nb = GPU_NB if A.is_cuda else CPU_NB
    a = A.to(torch.float32).contiguous().clone()  # scratch copy, factored in place
    x = b.to(torch.float32).contiguous().clone()  # solved in place
    if a.shape[0] and x.shape[1]:
        inv = cholesky_in_place(a, nb)
        _cholesky_solve_in_place(a, inv, x, nb)
    return x
