"""Expert kernel for LinearAlgebra/solve_and_add_scaled_vector: back substitution by super-blocks, each a one-program triangular solve followed by a parallel update of the rows above.

Going up in super-blocks of SUPER rows: one program per right-hand-side column solves the super-block's
diagonal triangle (in blocks of BS rows: subtract A[block, solved part of the super-block] @ x, then solve
the BS x BS diagonal block in registers), writing x to a scratch buffer and x + alpha * y (y read through
broadcast strides) to the output; then a row-parallel kernel subtracts A[rows above, super-block] @ x from
the right-hand sides of every row above (coalesced row tiles of A). The sequential part is the diagonal
triangles (about n * SUPER / 2 elements of A read by one program each step), the rest of A is read once at
the GPU's bandwidth: 2 n / SUPER launches. fp64 inputs are computed in fp64, others in fp32.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 0.495 / 1.02 / 2.04 / 4.17 ms at n = 2048 / 4096 / 8192 /
16384 (one right-hand side) against eager's 0.150 / 0.281 / 0.550 / 1.11 ms (cuBLAS trsm, then the alpha * y
add), 0.28x. Not launch-bound: 2 n / 1024 - 1 launches (3 at n2048, 31 at n16384). The time is about 0.25 ms per
1,024-row super-block at every n: each super-block's triangle (about 524k entries of A) is solved by one program
on one SM, in 32 dependent 32-row blocks; only the update, which reads the rest of A once, runs lo / 32 programs.
A smaller SUPER shrinks that one-program share (n * SUPER / 2 entries) but adds launches (2 n / SUPER).
"""

import torch
import triton
import triton.language as tl

BS_MAX = 32
BC = 128  # columns per step of a row tile
SUPER = 1024  # rows of a super-block
UPDATE_ROWS = 32  # rows per program of the update


@triton.jit
def _diag_solve_kernel(a_ptr, r_ptr, y_ptr, xs_ptr, out_ptr, n, k, lo, hi, alpha, sa0, sy0, sy1,
                       F64: tl.constexpr, BS: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    """Rows lo..hi-1 (one column of the right-hand sides per program): r already holds b minus A[:, hi:] @ x."""
    col = tl.program_id(0).to(tl.int64)
    cdt = tl.float64 if F64 else tl.float32
    nb = tl.cdiv(hi - lo, BS)
    lane = tl.arange(0, BS).to(tl.int64)
    for t in range(0, nb):
        r0 = lo + (nb - 1 - t).to(tl.int64) * BS
        rows = r0 + lane
        rmask = rows < hi
        rhs = tl.load(r_ptr + rows * k + col, mask=rmask, other=0.0).to(cdt)
        for c0 in range(r0 + BS, hi, BC):
            cols = c0 + tl.arange(0, BC).to(tl.int64)
            cmask = cols < hi
            tile = tl.load(a_ptr + rows[:, None] * sa0 + cols[None, :], mask=rmask[:, None] & cmask[None, :],
                           other=0.0).to(cdt)  # fmt: skip
            xs = tl.load(xs_ptr + cols * k + col, mask=cmask, other=0.0).to(cdt)
            rhs -= tl.sum(tile * xs[None, :], axis=1)
        dvals = tl.load(a_ptr + rows * sa0 + rows, mask=rmask, other=1.0).to(cdt)  # the block's diagonal
        xb = tl.zeros([BS], dtype=cdt)
        for s in tl.static_range(BS):
            j = BS - 1 - s
            sel = lane == j
            # column j of the diagonal block, rows above j (cached in L1 after the first touch)
            cmask = (lane < j) & (r0 + j + lane * 0 < hi)
            dcol = tl.load(a_ptr + rows * sa0 + (r0 + j), mask=cmask, other=0.0).to(cdt)
            xj = tl.sum(tl.where(sel, rhs / dvals, 0.0), axis=0)
            xb = tl.where(sel, xj, xb)
            rhs -= dcol * xj
        tl.store(xs_ptr + rows * k + col, xb.to(xs_ptr.dtype.element_ty), mask=rmask)
        yv = tl.load(y_ptr + rows * sy0 + col * sy1, mask=rmask, other=0.0).to(cdt)
        tl.store(out_ptr + rows * k + col, (xb + alpha * yv).to(out_ptr.dtype.element_ty), mask=rmask)
        tl.debug_barrier()


@triton.jit
def _update_kernel(a_ptr, r_ptr, xs_ptr, k, lo, hi, sa0, F64: tl.constexpr, ROWS: tl.constexpr,
                   BC: tl.constexpr):  # fmt: skip
    """r[rows, col] -= A[rows, lo:hi] @ x[lo:hi, col] for a block of ROWS rows above lo and one column."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    col = tl.program_id(1).to(tl.int64)
    cdt = tl.float64 if F64 else tl.float32
    rmask = rows < lo
    acc = tl.zeros([ROWS, BC], dtype=cdt)
    for c0 in range(lo, hi, BC):
        cols = c0 + tl.arange(0, BC).to(tl.int64)
        cmask = cols < hi
        tile = tl.load(a_ptr + rows[:, None] * sa0 + cols[None, :], mask=rmask[:, None] & cmask[None, :],
                       other=0.0).to(cdt)  # fmt: skip
        acc += tile * tl.load(xs_ptr + cols * k + col, mask=cmask, other=0.0).to(cdt)[None, :]
    ptrs = r_ptr + rows * k + col
    tl.store(ptrs, tl.load(ptrs, mask=rmask, other=0.0) - tl.sum(acc, axis=1), mask=rmask)


def solve_and_add_scaled_vector(A, b, y, alpha, super_rows: int = SUPER):
    n = A.shape[-1]
    a = A if A.stride(-1) == 1 else A.contiguous()
    k = b.shape[-1]
    f64 = A.dtype == torch.float64
    yb = torch.broadcast_to(y, b.shape)
    out = torch.empty((n, k), dtype=A.dtype, device=A.device)
    if not (n and k):
        return out
    r = torch.empty((n, k), dtype=torch.float64 if f64 else torch.float32, device=A.device)
    r.copy_(b)  # working right-hand sides, updated in place (a copy: b is the caller's)
    xs = torch.empty_like(r)  # x alone, for the updates
    bs = min(BS_MAX, triton.next_power_of_2(max(n, 2)))
    for hi in range(n, 0, -super_rows):
        lo = max(0, hi - super_rows)
        _diag_solve_kernel[(k,)](a, r, yb, xs, out, n, k, lo, hi, float(alpha), a.stride(0), yb.stride(0),
                                 yb.stride(1), F64=f64, BS=bs, BC=BC)  # fmt: skip
        if lo:
            _update_kernel[(triton.cdiv(lo, UPDATE_ROWS), k)](a, r, xs, k, lo, hi, a.stride(0), F64=f64,
                                                              ROWS=UPDATE_ROWS, BC=BC)  # fmt: skip
    return out
