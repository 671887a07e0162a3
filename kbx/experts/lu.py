"""Blocked LU with partial pivoting of [A | B], then blocked back substitution, in Triton: the
kernels the expert solutions of `LinearAlgebra/solve`, `LinearAlgebra/invert_matrix_lu` and
`Fusion/fused_lu_solve` share (each expert imports `lu_solve`; kbx is importable in a worker).

Per panel of NB columns one program factors the panel (pivot search, row swap, multipliers), a parallel
kernel forms U12 = L11^-1 A12 (right-hand sides included) and a tiled IEEE-fp32 tl.dot kernel updates the
trailing block; the back substitution goes up in blocks of NB rows (a parallel diagonal-block solve, then a
tl.dot update of the right-hand sides above). About 5 n / NB launches and one host sync (the zero-pivot
flag), against 3 n launches and a full re-read of the trailing block per column before.

`lu_factor` is the factorization alone, for any (m, ld) matrix and dtype, with the row permutation and the
count of row swaps: the expert solutions of `LinearAlgebra/lu`, `det` and `determinant_lu` use it too.
"""


import torch
import triton
import triton.language as tl

NB = 32  # panel width: columns factored by one program before the trailing update
# rows per step of the panel program, and its warps: on an H200 (2026-11-29, docs/BENCHMARKS.md) a determinant
# took 7.05 / 97.4 ms at n = 1024 / 4096 with 256 rows and 8 warps, 8.42 / 129.6 with 128 and 8, 8.66 / 107 with
# 512 and 8, 7.82 / 94.5 with 512 and 16, 17.5 / 181 with 1024 and 16
PANEL_ROWS = 256
PANEL_WARPS = 8
SWAP_BLOCK = 256
TRSM_COLS = 64  # columns of U12 (or of the right-hand sides) per program of the triangular solves
GEMM_M, GEMM_N = 64, 64  # trailing-update tiles


@triton.jit(do_not_specialize=["k0", "kb"])
def _panel_kernel(w_ptr, flag_ptr, perm_ptr, swaps_ptr, n, ld, k0, kb, PIVOT: tl.constexpr, WHOLE_ROWS: tl.constexpr,
                  ROWS: tl.constexpr, NB: tl.constexpr, SWAP: tl.constexpr):  # fmt: skip
    """Unblocked LU with partial pivoting of the panel W[k0:, k0:k0+kb] (n rows), in one program: per column the
    pivot row (largest |value|) is swapped in across columns k0.. of [A | B] (the panel's multipliers, the
    trailing block and the right-hand sides; columns left of k0 are never read again by the factorization,
    so they are swapped only for WHOLE_ROWS, where L is wanted), the column below the pivot becomes the
    multipliers and the panel's later columns are updated. An exactly zero pivot sets the flag; a swap is
    recorded in perm (row i of the result is row perm[i] of the input) and counted in swaps.

    READ_BEFORE_WRITE: each in-place update reads all it needs, waits at a barrier, then writes. Without
    the barriers the kernel was wrong on the GPU only. On an H100 (2026-11-27), over 8 solves each at
    n = 512, 1024, 2048 and 4096, the worst relative residual was 1.1-1.5e-2 without them and 1.4-3.4e-7
    with them, for 2-6 % more time (docs/BENCHMARKS.md; tests/experts/test_lu_gpu.py checks the residuals).
    The likely mechanism, not observed directly: Triton spreads a block over more threads than it has
    values (128 rows over 8 warps) and stores a replicated value from one thread while every replica
    loads it, so a warp that loads after another warp's store reads the new value (a multiplier divided
    twice by its pivot). The interpreter runs one thread and cannot show it.
    """
    cols = k0 + tl.arange(0, NB)
    in_panel = cols < k0 + kb
    swaps = tl.load(swaps_ptr)
    first_col = 0 if WHOLE_ROWS else k0
    for jj in range(0, kb):
        j = (k0 + jj).to(tl.int64)
        best = j
        best_val = tl.abs(tl.load(w_ptr + j * ld + j))
        if PIVOT:
            for r0 in range(j + 1, n, ROWS):
                rows = r0 + tl.arange(0, ROWS).to(tl.int64)
                v = tl.where(rows < n, tl.abs(tl.load(w_ptr + rows * ld + j, mask=rows < n, other=0.0)), -1.0)
                blk_max = tl.max(v, axis=0)
                if blk_max > best_val:
                    best_val = blk_max
                    best = tl.argmax(v, axis=0).to(tl.int64) + r0
            if best != j:
                perm_j = tl.load(perm_ptr + j)
                perm_best = tl.load(perm_ptr + best)
                tl.debug_barrier()  # see READ_BEFORE_WRITE
                tl.store(perm_ptr + j, perm_best)
                tl.store(perm_ptr + best, perm_j)
                swaps += 1
                for c0 in range(first_col, ld, SWAP):
                    c = c0 + tl.arange(0, SWAP).to(tl.int64)
                    m = c < ld
                    row_j = tl.load(w_ptr + j * ld + c, mask=m)
                    row_p = tl.load(w_ptr + best * ld + c, mask=m)
                    tl.debug_barrier()  # see READ_BEFORE_WRITE
                    tl.store(w_ptr + j * ld + c, row_p, mask=m)
                    tl.store(w_ptr + best * ld + c, row_j, mask=m)
            tl.debug_barrier()
        pivot = tl.load(w_ptr + j * ld + j)
        if pivot == 0.0:
            tl.store(flag_ptr, 1)
        safe = tl.where(pivot == 0.0, 1.0, pivot)
        later = in_panel & (cols > j)
        urow = tl.load(w_ptr + j * ld + cols, mask=later, other=0.0)
        for e0 in range(j + 1, n, ROWS):
            rows = e0 + tl.arange(0, ROWS).to(tl.int64)
            rm = rows < n
            mult = tl.load(w_ptr + rows * ld + j, mask=rm, other=0.0) / safe
            mult = tl.where(pivot == 0.0, 0.0, mult)
            ptrs = w_ptr + rows[:, None] * ld + cols[None, :]
            m2 = rm[:, None] & later[None, :]
            updated = tl.load(ptrs, mask=m2, other=0.0) - mult[:, None] * urow[None, :]
            tl.debug_barrier()  # see READ_BEFORE_WRITE
            tl.store(w_ptr + rows * ld + j, mult, mask=rm)
            tl.store(ptrs, updated, mask=m2)
        tl.debug_barrier()
    tl.store(swaps_ptr, swaps)


@triton.jit(do_not_specialize=["kb", "ncols"])
def _unit_lower_solve_kernel(l_ptr, b_ptr, ld, kb, ncols, NB: tl.constexpr, COLS: tl.constexpr):
    """B <- L^-1 B for the unit lower triangle L (kb x kb) at l_ptr and B (kb x ncols) at b_ptr, row stride ld;
    a block of COLS columns per program, held in registers while the rows are eliminated in turn."""
    r = tl.arange(0, NB)
    rm = r < kb
    c = tl.program_id(0) * COLS + tl.arange(0, COLS)
    cm = c < ncols
    ptrs = b_ptr + r[:, None].to(tl.int64) * ld + c[None, :]
    tile = tl.load(ptrs, mask=rm[:, None] & cm[None, :], other=0.0)
    for jj in range(0, kb):
        xj = tl.sum(tl.where(r[:, None] == jj, tile, 0.0), axis=0)
        lcol = tl.load(l_ptr + r.to(tl.int64) * ld + jj, mask=rm & (r > jj), other=0.0)
        tile -= lcol[:, None] * xj[None, :]
    tl.store(ptrs, tile, mask=rm[:, None] & cm[None, :])


@triton.jit(do_not_specialize=["kb", "ncols"])
def _upper_solve_kernel(u_ptr, b_ptr, x_ptr, ld, ldx, kb, ncols, NB: tl.constexpr, COLS: tl.constexpr):
    """X = U^-1 B for the upper triangle U (kb x kb) at u_ptr and B (kb x ncols) at b_ptr (row stride ld),
    written to x_ptr (row stride ldx); a block of COLS columns per program, in registers."""
    r = tl.arange(0, NB)
    rm = r < kb
    c = tl.program_id(0) * COLS + tl.arange(0, COLS)
    cm = c < ncols
    tile = tl.load(b_ptr + r[:, None].to(tl.int64) * ld + c[None, :], mask=rm[:, None] & cm[None, :], other=0.0)
    for t in range(0, kb):
        jj = kb - 1 - t
        xj = tl.sum(tl.where(r[:, None] == jj, tile, 0.0), axis=0) / tl.load(u_ptr + jj * ld + jj)
        tile = tl.where(r[:, None] == jj, xj[None, :], tile)
        ucol = tl.load(u_ptr + r.to(tl.int64) * ld + jj, mask=r < jj, other=0.0)
        tile -= ucol[:, None] * xj[None, :]
    tl.store(x_ptr + r[:, None].to(tl.int64) * ldx + c[None, :], tile, mask=rm[:, None] & cm[None, :])


@triton.jit(do_not_specialize=["M", "N", "K"])
def _gemm_sub_kernel(a_ptr, lda, b_ptr, ldb, c_ptr, ldc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):  # fmt: skip
    """C[:M, :N] -= A[:M, :K] @ B[:K, :N] (row-major with the given row strides; K <= BK), IEEE fp32 tl.dot."""
    rows = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)
    cols = tl.program_id(1).to(tl.int64) * BN + tl.arange(0, BN)
    k = tl.arange(0, BK)
    rm = rows < M
    cm = cols < N
    km = k < K
    a = tl.load(a_ptr + rows[:, None] * lda + k[None, :], mask=rm[:, None] & km[None, :], other=0.0)
    b = tl.load(b_ptr + k[:, None].to(tl.int64) * ldb + cols[None, :], mask=km[:, None] & cm[None, :], other=0.0)
    ptrs = c_ptr + rows[:, None] * ldc + cols[None, :]
    mask = rm[:, None] & cm[None, :]
    tl.store(ptrs, tl.load(ptrs, mask=mask, other=0.0) - tl.dot(a, b, input_precision="ieee"), mask=mask)


def _gemm_sub(a, b, c):
    """c -= a @ b on row-major views (each with unit column stride), a's columns at most NB."""
    M, K = a.shape
    N = b.shape[1]
    if M and N and K:
        grid = (triton.cdiv(M, GEMM_M), triton.cdiv(N, GEMM_N))
        _gemm_sub_kernel[grid](a, a.stride(0), b, b.stride(0), c, c.stride(0), M, N, K, BM=GEMM_M, BN=GEMM_N, BK=NB)


def lu_factor(w: torch.Tensor, pivot: bool = True, whole_rows: bool = False):
    """Factor w (m, ld) in place, LU with partial pivoting of its first min(m, ld) columns, the rest carried
    along as right-hand sides: per panel of NB columns one program factors the panel (_panel_kernel), a
    parallel kernel forms U12 = L11^-1 A12 (right-hand sides included) and a tiled tl.dot kernel updates the
    trailing block, A22 -= L21 U12 (IEEE precision: TF32 would lose the digits a solve needs). Returns
    (perm, swaps, flag) on the device: the row order (int32, m), the number of row swaps and whether a pivot
    was exactly zero. whole_rows also swaps the multipliers left of each panel, so that w holds L and U of
    the permuted rows (as LAPACK's getrf); a determinant or a solve does not need it."""
    m, ld = w.shape
    perm = torch.arange(m, dtype=torch.int32, device=w.device)
    swaps = torch.zeros((1,), dtype=torch.int32, device=w.device)
    flag = torch.zeros((1,), dtype=torch.int32, device=w.device)
    kk = min(m, ld)
    for k0 in range(0, kk, NB):
        kb = min(NB, kk - k0)
        _panel_kernel[(1,)](w, flag, perm, swaps, m, ld, k0, kb, PIVOT=bool(pivot), WHOLE_ROWS=whole_rows,
                            ROWS=PANEL_ROWS, NB=NB, SWAP=SWAP_BLOCK, num_warps=PANEL_WARPS)  # fmt: skip
        rest = ld - k0 - kb
        if rest:
            _unit_lower_solve_kernel[(triton.cdiv(rest, TRSM_COLS),)](w[k0:, k0:], w[k0:, k0 + kb:], ld, kb, rest,
                                                                      NB=NB, COLS=TRSM_COLS)  # fmt: skip
            _gemm_sub(w[k0 + kb:, k0:k0 + kb], w[k0:k0 + kb, k0 + kb:], w[k0 + kb:, k0 + kb:])
    return perm, swaps, flag


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _determinant_kernel(w_ptr, swaps_ptr, out_ptr, n, ld, BLOCK: tl.constexpr):
    """out = (-1)^swaps * prod(diag(U)) for the factored (n, n) block of w."""
    acc = tl.where(tl.load(swaps_ptr) % 2 == 1, -1.0, 1.0).to(w_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        i = (start + tl.arange(0, BLOCK)).to(tl.int64)
        acc = acc * tl.reduce(tl.load(w_ptr + i * (ld + 1), mask=i < n, other=1.0), 0, _mul)
    tl.store(out_ptr, acc)


def determinant(a: torch.Tensor, out: torch.Tensor, pivot: bool = True) -> None:
    """out[0] = det(a) for a square (n, n) matrix through lu_factor (on a scratch copy): the product of U's
    diagonal, its sign flipped once per row swap. An exactly zero pivot puts a 0 on the diagonal."""
    w = a.clone()
    _, swaps, _ = lu_factor(w, pivot)
    _determinant_kernel[(1,)](w, swaps, out, a.shape[0], w.shape[1], BLOCK=SWAP_BLOCK)


def lu_solve(a: torch.Tensor, b2: torch.Tensor, pivot: bool = True) -> torch.Tensor:
    """X with a @ X = b2 for square fp32 a (n, n) and b2 (n, m); RuntimeError on an exactly zero pivot.

    lu_factor on [A | B], then blocked back substitution: per block of NB rows from the bottom, a parallel
    kernel solves its diagonal block and a tl.dot kernel updates the right-hand sides above. About
    3 n / NB + 2 n / NB launches and one host sync (the zero-pivot flag)."""
    n, m = a.shape[0], b2.shape[1]
    ld = n + m
    w = torch.empty((n, ld), dtype=torch.float32, device=a.device)  # [A | B], factored in place
    w[:, :n].copy_(a)
    w[:, n:].copy_(b2)
    x = torch.empty((n, m), dtype=torch.float32, device=a.device)
    _, _, flag = lu_factor(w, pivot)
    if int(flag.item()):
        raise RuntimeError("the matrix is singular (an exactly zero pivot)")
    for k0 in range(((n - 1) // NB) * NB, -1, -NB):
        kb = min(NB, n - k0)
        _upper_solve_kernel[(triton.cdiv(m, TRSM_COLS),)](w[k0:, k0:], w[k0:, n:], x[k0:], ld, m, kb, m,
                                                          NB=NB, COLS=TRSM_COLS)  # fmt: skip
        _gemm_sub(w[:k0, k0:k0 + kb], x[k0:k0 + kb], w[:k0, n:])
    return x
