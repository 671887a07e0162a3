"""Unblocked Gaussian elimination with partial pivoting in Triton, for a determinant: the kernels the
expert solutions of `LinearAlgebra/det` and `determinant_lu` share (each expert imports them).
"""

import triton
import triton.language as tl

PIVOT_BLOCK = 256
TILE_M, TILE_N = 64, 64


@triton.jit(do_not_specialize=["k"])  # k == 1 would otherwise become a constexpr without .to()
def pivot_kernel(w_ptr, diag_ptr, sign_ptr, n, k, PIVOT: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    base = w_ptr + b * n * n
    best = k.to(tl.int64)
    if PIVOT:
        best_val = tl.abs(tl.load(base + k * n + k))
        for start in range(k + 1, n, BLOCK):
            rows = start + tl.arange(0, BLOCK).to(tl.int64)
            rmask = rows < n
            v = tl.where(rmask, tl.abs(tl.load(base + rows * n + k, mask=rmask, other=0.0)), -1.0)
            blk_max = tl.max(v, axis=0)
            blk_arg = tl.argmax(v, axis=0).to(tl.int64) + start
            if blk_max > best_val:
                best_val = blk_max
                best = blk_arg
        if best != k:
            for start in range(k, n, BLOCK):
                cols = start + tl.arange(0, BLOCK).to(tl.int64)
                m = cols < n
                row_k = tl.load(base + k * n + cols, mask=m)
                row_p = tl.load(base + best * n + cols, mask=m)
                tl.store(base + k * n + cols, row_p, mask=m)
                tl.store(base + best * n + cols, row_k, mask=m)
            tl.store(sign_ptr + b, -tl.load(sign_ptr + b))
    tl.store(diag_ptr + b * n + k, tl.load(base + k * n + k))


@triton.jit
def update_kernel(w_ptr, n, k, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    b = tl.program_id(2).to(tl.int64)
    base = w_ptr + b * n * n
    rows = k + 1 + tl.program_id(0).to(tl.int64) * TILE_M + tl.arange(0, TILE_M)
    cols = k + 1 + tl.program_id(1).to(tl.int64) * TILE_N + tl.arange(0, TILE_N)
    rmask = rows < n
    cmask = cols < n
    pivot = tl.load(base + k * n + k)
    safe = tl.where(pivot == 0.0, 1.0, pivot)
    mult = tl.load(base + rows * n + k, mask=rmask, other=0.0) / safe
    mult = tl.where(pivot == 0.0, 0.0, mult)
    urow = tl.load(base + k * n + cols, mask=cmask, other=0.0)
    ptrs = base + rows[:, None] * n + cols[None, :]
    m2 = rmask[:, None] & cmask[None, :]
    w = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, w - mult[:, None] * urow[None, :], mask=m2)


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def product_kernel(diag_ptr, sign_ptr, out_ptr, n, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    acc = tl.load(sign_ptr + b)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        d = tl.load(diag_ptr + b * n + offs, mask=offs < n, other=1.0)
        acc = acc * tl.reduce(d, 0, mul)
    tl.store(out_ptr + b, acc)
