"""Blocked Cholesky in Triton: the panel, update and triangular-inverse kernels the expert solutions of
`LinearAlgebra/cholesky`, `cholesky_solve` and `Fusion/fused_cholesky_solve` share (each expert imports them).
"""

import torch
import triton
import triton.language as tl

TILE = 64  # rows (and columns) per program in the panel and trailing updates


@triton.jit
def tile_cholesky(t, idx, NB: tl.constexpr):
    """Lower Cholesky factor of the SPD tile t (NB x NB, only its lower part read), zeros above."""
    for j in range(NB):
        c = tl.sum(tl.where(idx[None, :] == j, t, 0.0), axis=1)  # column j, indexed by row
        d = tl.sqrt(tl.sum(tl.where(idx == j, c, 0.0), axis=0))
        col = tl.where(idx > j, c / d, 0.0)
        t = t - col[:, None] * col[None, :]  # touches only rows and columns > j
        t = tl.where(idx[None, :] == j, tl.where(idx == j, d, col)[:, None], t)
    return t


@triton.jit
def tile_lower_inverse(low, idx, NB: tl.constexpr):
    """Inverse of the nonsingular lower-triangular tile low, row by row: X_i = (e_i - sum_j L_ij X_j) / L_ii."""
    low_t = tl.trans(low)
    x = tl.zeros((NB, NB), dtype=low.dtype)
    for i in range(NB):
        li = tl.sum(tl.where(idx[None, :] == i, low_t, 0.0), axis=1)  # L[i, j], indexed by j
        s = tl.sum(li[:, None] * x, axis=0)
        dii = tl.sum(tl.where(idx == i, li, 0.0), axis=0)
        row = (tl.where(idx == i, 1.0, 0.0) - s) / dii
        x = tl.where(idx[:, None] == i, row[None, :], x)
    return x


@triton.jit
def diag_kernel(a_ptr, inv_ptr, n, k0, NB: tl.constexpr):
    """Factor the diagonal block at k0 in place; store inv(L_kk) (block k0 // NB of inv)."""
    idx = tl.arange(0, NB)
    r = k0 + idx
    ok = r < n
    m2 = ok[:, None] & ok[None, :]
    ptrs = a_ptr + r[:, None].to(tl.int64) * n + r[None, :]
    t = tl.load(ptrs, mask=m2, other=0.0)
    t = tl.where(m2, t, tl.where(idx[:, None] == idx[None, :], 1.0, 0.0))  # identity padding past n
    low = tile_cholesky(t, idx, NB)
    tl.store(ptrs, low, mask=m2 & (idx[:, None] >= idx[None, :]))
    x = tile_lower_inverse(low, idx, NB)
    tl.store(inv_ptr + (k0 // NB) * NB * NB + idx[:, None] * NB + idx[None, :], x)


@triton.jit
def panel_kernel(a_ptr, inv_ptr, n, k0, NB: tl.constexpr, TILE: tl.constexpr):
    """L21 = A21 inv(L11)^T for a tile of rows below the diagonal block."""
    rows = k0 + NB + tl.program_id(0) * TILE + tl.arange(0, TILE)
    idx = tl.arange(0, NB)
    rm = rows < n
    ptrs = a_ptr + rows[:, None].to(tl.int64) * n + (k0 + idx)[None, :]
    p = tl.load(ptrs, mask=rm[:, None], other=0.0)
    inv_t = tl.load(inv_ptr + (k0 // NB) * NB * NB + idx[None, :] * NB + idx[:, None])  # inv(L11)^T
    tl.store(ptrs, tl.dot(p, inv_t, input_precision="ieee"), mask=rm[:, None])


@triton.jit
def syrk_kernel(a_ptr, n, k0, NB: tl.constexpr, TILE: tl.constexpr):
    """A22[I, J] -= L21[I] L21[J]^T for the lower tiles (I >= J) of the trailing matrix."""
    ti = tl.program_id(0)
    tj = tl.program_id(1)
    if tj <= ti:
        start = k0 + NB
        rows = start + ti * TILE + tl.arange(0, TILE)
        cols = start + tj * TILE + tl.arange(0, TILE)
        idx = k0 + tl.arange(0, NB)
        rm = rows < n
        cm = cols < n
        li = tl.load(a_ptr + rows[:, None].to(tl.int64) * n + idx[None, :], mask=rm[:, None], other=0.0)
        lj_t = tl.load(a_ptr + cols[None, :].to(tl.int64) * n + idx[:, None], mask=cm[None, :], other=0.0)
        ptrs = a_ptr + rows[:, None].to(tl.int64) * n + cols[None, :]
        m2 = rm[:, None] & cm[None, :]
        acc = tl.load(ptrs, mask=m2, other=0.0)
        acc -= tl.dot(li, lj_t, input_precision="ieee")
        tl.store(ptrs, acc, mask=m2)


def cholesky_in_place(a, nb):
    """Overwrite a's lower triangle with its Cholesky factor; return the inverted diagonal blocks."""
    n = a.shape[0]
    inv = torch.empty((triton.cdiv(n, nb), nb, nb), dtype=a.dtype, device=a.device)
    for k0 in range(0, n, nb):
        diag_kernel[(1,)](a, inv, n, k0, NB=nb)
        rest = n - k0 - nb
        if rest > 0:
            panel_kernel[(triton.cdiv(rest, TILE),)](a, inv, n, k0, NB=nb, TILE=TILE)
            t = triton.cdiv(rest, TILE)
            syrk_kernel[(t, t)](a, n, k0, NB=nb, TILE=TILE)
    return inv
