"""Expert kernels for LinearAlgebra/lu: right-looking LU elimination (partial pivoting optional) on a scratch copy.

For each column k < min(m, n), a one-program kernel per matrix picks the pivot (largest |entry| in rows
k.., when pivoting), swaps whole rows k and p (the multipliers already stored left of column k move
with them, as in LAPACK) and the permutation entries, then divides column k below the diagonal by the
pivot, leaving L's multipliers there. A tiled 2-D kernel applies the rank-1 update to the trailing
block (rows and columns > k); column k and row k are only read by it, so its programs never race.
Three elementwise kernels then write P (P[perm[j], j] = 1), the unit lower L and the upper U with exact
zeros outside their triangles. An exactly zero pivot gives multipliers of 0 (torch does the same for
an exactly zero column). The math runs in A's dtype (fp32 or fp64); batches run side by side.
Unblocked, it re-reads the trailing block every step (O(m n^2) memory traffic, 2 launches per column).

The pivot kernel waits at a barrier between the row swap and the reads of the pivot and column k: the
threads that read them are not those that wrote them, and without it a warp could divide by the pre-swap
pivot (on an H100, 2026-11-27, |L| reached 82.6 at n1024, where partial pivoting keeps it at most 1; the
same defect class as kbx/experts/lu.py, whose fix was measured there; with the barrier this expert was ok
in every full-suite run since: four on two H200s and the H100 runs of docs/BENCHMARKS.md).

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 35.9 / 60.5 / 170 ms at n = 1024 / 2048 / 4096 against
eager's 2.18 / 5.18 / 13.2 ms (cuSOLVER's blocked getrf, then P, L and U unpacked), 0.07x. Launch-bound: 2n + 1
launches, a pivot and an update per column (2,049 at n1024, 18 us each; 8,193 at n4096, 21 us each); the update
also reads and writes the whole trailing block every column (8 n^3 / 3 bytes in all, about 180 GB at n4096;
counts from the code). A blocked LU like kbx/experts/lu.py's (a panel, a triangular solve and a tl.dot update
per 32 columns: 384 launches at n4096) would cut both, once it also returns P, L and U.
"""

import torch
import triton
import triton.language as tl

PIVOT_BLOCK = 256
TILE_M, TILE_N = 64, 64
COPY_BLOCK = 1024


@triton.jit(do_not_specialize=["k"])  # k == 1 would otherwise become a constexpr without .to()
def _pivot_kernel(w_ptr, perm_ptr, m, n, k, PIVOT: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    base = w_ptr + b * m * n
    if PIVOT:
        best = k.to(tl.int64)
        best_val = tl.abs(tl.load(base + k * n + k))
        for start in range(k + 1, m, BLOCK):
            rows = start + tl.arange(0, BLOCK).to(tl.int64)
            rmask = rows < m
            v = tl.where(rmask, tl.abs(tl.load(base + rows * n + k, mask=rmask, other=0.0)), -1.0)
            blk_max = tl.max(v, axis=0)
            blk_arg = tl.argmax(v, axis=0).to(tl.int64) + start
            if blk_max > best_val:
                best_val = blk_max
                best = blk_arg
        if best != k:
            for start in range(0, n, BLOCK):
                cols = start + tl.arange(0, BLOCK).to(tl.int64)
                cm = cols < n
                row_k = tl.load(base + k * n + cols, mask=cm)
                row_p = tl.load(base + best * n + cols, mask=cm)
                tl.store(base + k * n + cols, row_p, mask=cm)
                tl.store(base + best * n + cols, row_k, mask=cm)
            pk = tl.load(perm_ptr + b * m + k)
            tl.store(perm_ptr + b * m + k, tl.load(perm_ptr + b * m + best))
            tl.store(perm_ptr + b * m + best, pk)
        tl.debug_barrier()  # the swap's stores, by other threads, before the pivot and column k are read
    pivot = tl.load(base + k * n + k)
    safe = tl.where(pivot == 0.0, 1.0, pivot)
    for start in range(k + 1, m, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        rmask = rows < m
        col = tl.load(base + rows * n + k, mask=rmask, other=0.0)
        tl.store(base + rows * n + k, tl.where(pivot == 0.0, 0.0, col / safe), mask=rmask)


@triton.jit
def _update_kernel(w_ptr, m, n, k, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    b = tl.program_id(2).to(tl.int64)
    base = w_ptr + b * m * n
    rows = k + 1 + tl.program_id(0).to(tl.int64) * TILE_M + tl.arange(0, TILE_M)
    cols = k + 1 + tl.program_id(1).to(tl.int64) * TILE_N + tl.arange(0, TILE_N)
    rmask = rows < m
    cmask = cols < n
    mult = tl.load(base + rows * n + k, mask=rmask, other=0.0)
    urow = tl.load(base + k * n + cols, mask=cmask, other=0.0)
    ptrs = base + rows[:, None] * n + cols[None, :]
    m2 = rmask[:, None] & cmask[None, :]
    w = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, w - mult[:, None] * urow[None, :], mask=m2)


@triton.jit
def _extract_kernel(w_ptr, l_ptr, u_ptr, m, n, kk, BLOCK: tl.constexpr):
    """L (m, kk): strict lower part of w plus a unit diagonal; U (kk, n): upper part of w's first kk rows."""
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    base = w_ptr + b * m * n
    li, lj = offs // kk, offs % kk
    lmask = offs < m * kk
    lv = tl.load(base + li * n + lj, mask=lmask & (li > lj), other=0.0)
    lv = tl.where(li == lj, 1.0, lv)
    tl.store(l_ptr + b * m * kk + offs, lv, mask=lmask)
    ui, uj = offs // n, offs % n
    umask = offs < kk * n
    uv = tl.load(base + ui * n + uj, mask=umask & (uj >= ui), other=0.0)
    tl.store(u_ptr + b * kk * n + offs, uv, mask=umask)


@triton.jit
def _permutation_kernel(perm_ptr, p_ptr, m, BLOCK: tl.constexpr):
    """P[r, c] = 1 where perm[c] == r: row c of the eliminated matrix is row perm[c] of A, so A = P L U."""
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < m * m
    r, c = offs // m, offs % m
    src = tl.load(perm_ptr + b * m + c, mask=mask, other=-1)
    tl.store(p_ptr + b * m * m + offs, tl.where(src == r, 1.0, 0.0).to(p_ptr.dtype.element_ty), mask=mask)


def lu(A: torch.Tensor, pivot: bool = True, out=None):
    if A.dim() < 2:
        raise RuntimeError(f"lu: A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    kk = min(m, n)
    w = A.to(dtype).reshape(-1, m, n).clone()  # scratch copy, eliminated in place
    nb = w.shape[0]
    perm = torch.arange(m, dtype=torch.int32, device=A.device).repeat(nb, 1).contiguous()
    if nb:
        for k in range(kk):
            _pivot_kernel[(nb,)](w, perm, m, n, k, PIVOT=bool(pivot), BLOCK=PIVOT_BLOCK)
            if k + 1 < m and k + 1 < n:
                grid = (triton.cdiv(m - k - 1, TILE_M), triton.cdiv(n - k - 1, TILE_N), nb)
                _update_kernel[grid](w, m, n, k, TILE_M=TILE_M, TILE_N=TILE_N)
    low = torch.empty((nb, m, kk), dtype=dtype, device=A.device)
    up = torch.empty((nb, kk, n), dtype=dtype, device=A.device)
    size = max(m * kk, kk * n)
    if nb and size:
        _extract_kernel[(triton.cdiv(size, COPY_BLOCK), nb)](w, low, up, m, n, kk, BLOCK=COPY_BLOCK)
    if pivot:
        p = torch.empty((nb, m, m), dtype=dtype, device=A.device)
        if nb and m:
            _permutation_kernel[(triton.cdiv(m * m, COPY_BLOCK), nb)](perm, p, m, BLOCK=COPY_BLOCK)
        p = p.reshape(*batch, m, m)
    else:
        p = torch.empty((0,), dtype=dtype, device=A.device)
    result = (p, low.reshape(*batch, m, kk), up.reshape(*batch, kk, n))
    if out is not None:
        for dst, src in zip(out, result, strict=True):
            dst.copy_(src)
        return out
    return result
