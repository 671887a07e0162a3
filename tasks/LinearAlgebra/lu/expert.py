"""Expert kernels for LinearAlgebra/lu: blocked LU (partial pivoting optional) of each matrix on a scratch copy
(kbx/experts/lu.py's lu_factor), then P, L and U unpacked.

lu_factor factors NB columns at a time: one program factors the panel (pivot search, a swap of whole rows,
so the multipliers already stored left of it move with them as in LAPACK, and the row order), a parallel
kernel forms U12 = L11^-1 A12 and a tiled tl.dot kernel (IEEE precision) updates the trailing block: about
3 min(m, n) / NB launches per matrix, where elimination one column at a time took 2 per column and re-read
the trailing block each time. A wide matrix's columns past m ride along as right-hand sides. Two elementwise
kernels then write P (P[perm[j], j] = 1), the unit lower L and the upper U with exact zeros outside their
triangles. An exactly zero pivot gives multipliers of 0 (torch does the same for an exactly zero column).
The math runs in A's dtype (fp32 or fp64); the matrices of a batch are factored one after another.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 7.21 / 25.8 / 107 ms at n = 1024
/ 2048 / 4096 against eager's 1.99 / 4.85 / 12.5 ms (cuSOLVER's blocked getrf, then P, L and U unpacked), 0.18x;
eliminating one column at a time (2n + 1 launches, the trailing block re-read every column) it was 0.079x. The panel
bounds it, as for LinearAlgebra/det (whose expert docstring gives the numbers); swapping whole rows adds little at
these sizes (7.2 against det's 7.7 ms at n1024).
"""

import torch
import triton
import triton.language as tl

from kbx.experts.lu import lu_factor

COPY_BLOCK = 1024


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
    w = A.to(dtype).reshape(-1, m, n).clone()  # scratch copy, factored in place
    nb = w.shape[0]
    perm = torch.arange(m, dtype=torch.int32, device=A.device).repeat(nb, 1)  # the identity where nothing is factored
    for b in range(nb if m and n else 0):
        perm[b] = lu_factor(w[b], pivot=bool(pivot), whole_rows=True)[0]
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
