"""Expert kernels for LinearAlgebra/ldl_factor: Bunch-Kaufman LDL^T (LDL^H) in LAPACK's sytf2/hetf2 lower format.

Right-looking and unblocked, two launches per column k, with no host synchronization:
1. one program per matrix runs LAPACK's pivot decision (alpha = (1 + sqrt 17) / 8): a 1x1 pivot at k, a
   1x1 pivot after interchanging k with imax, or a 2x2 pivot on (k, imax) moved to (k, k+1); it performs
   the symmetric (Hermitian) interchange inside the trailing matrix, writes the pivots (1-based; a 2x2
   block marked by equal negative entries) and L's column(s), and keeps the columns as they were before
   scaling (x) and the new L columns (w) in two small buffers; a 2x2 step marks column k + 1 as done;
2. a tiled kernel updates the trailing lower triangle, A[i, j] -= x1_i conj(w1_j) + x2_i conj(w2_j) for
   i >= j > the pivot block (for a 1x1 pivot x2 = w2 = 0 and x1 conj(w1) = x x^H / d), so both pivot sizes
   share it. A step already covered by the previous 2x2 block returns at once in both kernels.
Complex Hermitian matrices are handled as (re, im) pairs, with conjugation and a real diagonal as in hetf2.
A last kernel zeros the strict upper triangle. The math runs in A's dtype (fp32, fp64 or complex64).
Unblocked: O(n^3) memory traffic and 2n launches; a blocked (sytrf-style) panel would be faster.
The decision kernel waits at a barrier after the interchange: the threads that then read D and column k
are not those that wrote them (the defect class measured in kbx/experts/lu.py; this task failed its
output check at n1024 on an H100 on 2026-11-27, and the barrier awaits a GPU run).
"""

import torch
import triton
import triton.language as tl

BLOCK = 256  # elements per loop step in the pivot search and the interchange
TILE = 64  # trailing-update tile
COPY_BLOCK = 1024
BK_ALPHA = tl.constexpr(0.6403882032022076)  # (1 + sqrt(17)) / 8


@triton.jit
def _ld(a, i, j, n, mask, CPLX: tl.constexpr):
    """(re, im) of A[i, j] (im = 0 for real A)."""
    if CPLX:
        off = (i * n + j) * 2
        return tl.load(a + off, mask=mask, other=0.0), tl.load(a + off + 1, mask=mask, other=0.0)
    else:
        re = tl.load(a + i * n + j, mask=mask, other=0.0)
        return re, tl.zeros_like(re)


@triton.jit
def _st(a, i, j, n, re, im, mask, CPLX: tl.constexpr):
    if CPLX:
        off = (i * n + j) * 2
        tl.store(a + off, re, mask=mask)
        tl.store(a + off + 1, im, mask=mask)
    else:
        tl.store(a + i * n + j, re, mask=mask)


@triton.jit
def _absval(re, im, CPLX: tl.constexpr):
    if CPLX:
        return tl.sqrt(re * re + im * im)
    else:
        return tl.abs(re)


@triton.jit
def _col_max(a, col, lo, n, CPLX: tl.constexpr, BLOCK: tl.constexpr):
    """max and argmax of |A[i, col]| over lo <= i < n (max -1 when the range is empty)."""
    best = tl.full([], -1.0, dtype=a.dtype.element_ty)
    arg = lo
    for start in range(lo, n, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        m = rows < n
        re, im = _ld(a, rows, col, n, m, CPLX)
        v = tl.where(m, _absval(re, im, CPLX), -1.0)
        bm = tl.max(v, axis=0)
        if bm > best:
            best = bm
            arg = tl.argmax(v, axis=0).to(tl.int64) + start
    return best, arg


@triton.jit
def _row_max(a, row, lo, hi, n, CPLX: tl.constexpr, BLOCK: tl.constexpr):
    """max of |A[row, j]| over lo <= j < hi."""
    best = tl.full([], -1.0, dtype=a.dtype.element_ty)
    for start in range(lo, hi, BLOCK):
        cols = start + tl.arange(0, BLOCK).to(tl.int64)
        m = cols < hi
        re, im = _ld(a, row, cols, n, m, CPLX)
        best = tl.maximum(best, tl.max(tl.where(m, _absval(re, im, CPLX), -1.0), axis=0))
    return best


@triton.jit(do_not_specialize=["k"])
def _decide_kernel(a_ptr, piv_ptr, skip_ptr, x_ptr, w_ptr, n, k, CPLX: tl.constexpr, HERM: tl.constexpr,
                   BLOCK: tl.constexpr):  # fmt: skip
    b = tl.program_id(0).to(tl.int64)
    k = k.to(tl.int64)
    a = a_ptr + b * n * n * (2 if CPLX else 1)
    if tl.load(skip_ptr + b * (n + 1) + k) == 0:
        cs = -1.0 if HERM else 1.0  # conj(z) = (re, cs * im)
        akk_re, akk_im = _ld(a, k, k, n, True, CPLX)
        absakk = tl.abs(akk_re) if HERM else _absval(akk_re, akk_im, CPLX)
        colmax, imax = _col_max(a, k, k + 1, n, CPLX, BLOCK)
        colmax = tl.maximum(colmax, 0.0)
        kp = k
        kstep = 1
        if absakk < BK_ALPHA * colmax:
            rowmax = tl.maximum(_row_max(a, imax, k, imax, n, CPLX, BLOCK), _col_max(a, imax, imax + 1, n, CPLX,
                                                                                    BLOCK)[0])  # fmt: skip
            if absakk >= BK_ALPHA * colmax * (colmax / rowmax):
                kp = k
            else:
                dre, dim_ = _ld(a, imax, imax, n, True, CPLX)
                if (tl.abs(dre) if HERM else _absval(dre, dim_, CPLX)) >= BK_ALPHA * rowmax:
                    kp = imax
                else:
                    kp = imax
                    kstep = 2
        kk = k + kstep - 1
        if kp != kk:  # symmetric interchange of kk and kp inside the trailing matrix
            for start in range(kp + 1, n, BLOCK):
                rows = start + tl.arange(0, BLOCK).to(tl.int64)
                m = rows < n
                r1, i1 = _ld(a, rows, kk, n, m, CPLX)
                r2, i2 = _ld(a, rows, kp, n, m, CPLX)
                _st(a, rows, kk, n, r2, i2, m, CPLX)
                _st(a, rows, kp, n, r1, i1, m, CPLX)
            for start in range(kk + 1, kp, BLOCK):
                j = start + tl.arange(0, BLOCK).to(tl.int64)
                m = j < kp
                r1, i1 = _ld(a, j, kk, n, m, CPLX)
                r2, i2 = _ld(a, kp, j, n, m, CPLX)
                _st(a, j, kk, n, r2, cs * i2, m, CPLX)
                _st(a, kp, j, n, r1, cs * i1, m, CPLX)
            r1, i1 = _ld(a, kp, kk, n, True, CPLX)
            _st(a, kp, kk, n, r1, cs * i1, True, CPLX)
            r1, i1 = _ld(a, kk, kk, n, True, CPLX)
            r2, i2 = _ld(a, kp, kp, n, True, CPLX)
            _st(a, kk, kk, n, r2, i2, True, CPLX)
            _st(a, kp, kp, n, r1, i1, True, CPLX)
            if kstep == 2:
                r1, i1 = _ld(a, kk, k, n, True, CPLX)
                r2, i2 = _ld(a, kp, k, n, True, CPLX)
                _st(a, kk, k, n, r2, i2, True, CPLX)
                _st(a, kp, k, n, r1, i1, True, CPLX)
        tl.debug_barrier()  # the interchange's stores, by other threads, before D and column k are read
        xb = x_ptr + b * n * 4  # x and w: (n, 2 columns, re/im) per matrix
        wb = w_ptr + b * n * 4
        if kstep == 1:
            tl.store(piv_ptr + b * n + k, (kp + 1).to(tl.int32))
            d_re, d_im = _ld(a, k, k, n, True, CPLX)
            if HERM:
                d_im = 0.0 * d_im
                _st(a, k, k, n, d_re, d_im, True, CPLX)
            den = d_re * d_re + d_im * d_im
            inv_re = tl.where(den == 0, 0.0, d_re / tl.where(den == 0, 1.0, den))  # 1 / d (0 when d = 0)
            inv_im = tl.where(den == 0, 0.0, -d_im / tl.where(den == 0, 1.0, den))
            for start in range(k + 1, n, BLOCK):
                rows = start + tl.arange(0, BLOCK).to(tl.int64)
                m = rows < n
                xr, xi = _ld(a, rows, k, n, m, CPLX)
                lr = xr * inv_re - xi * inv_im
                li = xr * inv_im + xi * inv_re
                _st(a, rows, k, n, lr, li, m, CPLX)
                tl.store(xb + rows * 4, xr, mask=m)
                tl.store(xb + rows * 4 + 1, xi, mask=m)
                tl.store(xb + rows * 4 + 2, 0.0 * xr, mask=m)
                tl.store(xb + rows * 4 + 3, 0.0 * xr, mask=m)
                tl.store(wb + rows * 4, lr, mask=m)
                tl.store(wb + rows * 4 + 1, li, mask=m)
                tl.store(wb + rows * 4 + 2, 0.0 * xr, mask=m)
                tl.store(wb + rows * 4 + 3, 0.0 * xr, mask=m)
        else:
            tl.store(piv_ptr + b * n + k, (-(kp + 1)).to(tl.int32))
            tl.store(piv_ptr + b * n + k + 1, (-(kp + 1)).to(tl.int32))
            tl.store(skip_ptr + b * (n + 1) + k + 1, 1)
            c_re, c_im = _ld(a, k + 1, k, n, True, CPLX)  # D's off-diagonal entry d21
            cabs = _absval(c_re, c_im, CPLX)
            a11, a11i = _ld(a, k + 1, k + 1, n, True, CPLX)
            a00, a00i = _ld(a, k, k, n, True, CPLX)
            if HERM:
                _st(a, k, k, n, a00, 0.0 * a00i, True, CPLX)
                _st(a, k + 1, k + 1, n, a11, 0.0 * a11i, True, CPLX)
            d11 = a11 / cabs
            d22 = a00 / cabs
            tt = 1.0 / (d11 * d22 - 1.0)
            u_re = c_re / cabs  # d21 / |d21|
            u_im = c_im / cabs
            d = tt / cabs
            for start in range(k + 2, n, BLOCK):
                rows = start + tl.arange(0, BLOCK).to(tl.int64)
                m = rows < n
                x1r, x1i = _ld(a, rows, k, n, m, CPLX)
                x2r, x2i = _ld(a, rows, k + 1, n, m, CPLX)
                # wk = d (d11 x1 - u x2); wkp1 = d (d22 x2 - conj(u) x1)
                w1r = d * (d11 * x1r - (u_re * x2r - u_im * x2i))
                w1i = d * (d11 * x1i - (u_re * x2i + u_im * x2r))
                w2r = d * (d22 * x2r - (u_re * x1r - cs * u_im * x1i))
                w2i = d * (d22 * x2i - (u_re * x1i + cs * u_im * x1r))
                _st(a, rows, k, n, w1r, w1i, m, CPLX)
                _st(a, rows, k + 1, n, w2r, w2i, m, CPLX)
                tl.store(xb + rows * 4, x1r, mask=m)
                tl.store(xb + rows * 4 + 1, x1i, mask=m)
                tl.store(xb + rows * 4 + 2, x2r, mask=m)
                tl.store(xb + rows * 4 + 3, x2i, mask=m)
                tl.store(wb + rows * 4, w1r, mask=m)
                tl.store(wb + rows * 4 + 1, w1i, mask=m)
                tl.store(wb + rows * 4 + 2, w2r, mask=m)
                tl.store(wb + rows * 4 + 3, w2i, mask=m)


@triton.jit(do_not_specialize=["k"])
def _update_kernel(a_ptr, skip_ptr, x_ptr, w_ptr, n, k, CPLX: tl.constexpr, HERM: tl.constexpr,
                   TILE: tl.constexpr):  # fmt: skip
    """A[i, j] -= x1_i conj(w1_j) + x2_i conj(w2_j) for i >= j >= end of the pivot block."""
    b = tl.program_id(2).to(tl.int64)
    k = k.to(tl.int64)
    if tl.load(skip_ptr + b * (n + 1) + k) == 0:
        end = k + 1 + tl.load(skip_ptr + b * (n + 1) + k + 1).to(tl.int64)
        rows = k + 1 + tl.program_id(0).to(tl.int64) * TILE + tl.arange(0, TILE)
        cols = k + 1 + tl.program_id(1).to(tl.int64) * TILE + tl.arange(0, TILE)
        if tl.min(rows, axis=0) >= tl.min(cols, axis=0) - TILE:  # the tile reaches the lower triangle
            a = a_ptr + b * n * n * (2 if CPLX else 1)
            xb = x_ptr + b * n * 4
            wb = w_ptr + b * n * 4
            rm = (rows < n) & (rows >= end)
            cm = (cols < n) & (cols >= end)
            cs = -1.0 if HERM else 1.0
            x1r = tl.load(xb + rows * 4, mask=rm, other=0.0)
            x2r = tl.load(xb + rows * 4 + 2, mask=rm, other=0.0)
            w1r = tl.load(wb + cols * 4, mask=cm, other=0.0)
            w2r = tl.load(wb + cols * 4 + 2, mask=cm, other=0.0)
            m2 = rm[:, None] & cm[None, :] & (rows[:, None] >= cols[None, :])
            are, aim = _ld(a, rows[:, None], cols[None, :], n, m2, CPLX)
            if CPLX:
                x1i = tl.load(xb + rows * 4 + 1, mask=rm, other=0.0)
                x2i = tl.load(xb + rows * 4 + 3, mask=rm, other=0.0)
                w1i = cs * tl.load(wb + cols * 4 + 1, mask=cm, other=0.0)  # conj(w) when Hermitian
                w2i = cs * tl.load(wb + cols * 4 + 3, mask=cm, other=0.0)
                are -= x1r[:, None] * w1r[None, :] - x1i[:, None] * w1i[None, :]
                are -= x2r[:, None] * w2r[None, :] - x2i[:, None] * w2i[None, :]
                aim -= x1r[:, None] * w1i[None, :] + x1i[:, None] * w1r[None, :]
                aim -= x2r[:, None] * w2i[None, :] + x2i[:, None] * w2r[None, :]
                if HERM:
                    aim = tl.where(rows[:, None] == cols[None, :], 0.0, aim)
            else:
                are -= x1r[:, None] * w1r[None, :] + x2r[:, None] * w2r[None, :]
            _st(a, rows[:, None], cols[None, :], n, are, aim, m2, CPLX)


@triton.jit
def _tril_kernel(a_ptr, n, CPLX: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    i, j = offs // n, offs % n
    m = (offs < n * n) & (j > i)
    a = a_ptr + b * n * n * (2 if CPLX else 1)
    z = tl.zeros([BLOCK], dtype=a_ptr.dtype.element_ty)
    _st(a, i, j, n, z, z, m, CPLX)


def ldl_factor(A: torch.Tensor, hermitian: bool = False, out=None):
    n = A.shape[-1]
    if A.dim() < 2 or A.shape[-2] != n:
        raise RuntimeError(f"ldl_factor: expected square matrices, got shape {tuple(A.shape)}")
    batch = A.shape[:-2]
    cplx = A.is_complex()
    ld = A.reshape(-1, n, n).resolve_conj().clone()  # scratch copy, factored in place
    nb = ld.shape[0]
    piv = torch.zeros((nb, n), dtype=torch.int32, device=A.device)
    if nb and n:
        a = torch.view_as_real(ld) if cplx else ld
        real = a.dtype
        skip = torch.zeros((nb, n + 1), dtype=torch.int32, device=A.device)
        x = torch.zeros((nb, n, 4), dtype=real, device=A.device)
        w = torch.zeros((nb, n, 4), dtype=real, device=A.device)
        herm = bool(hermitian) and cplx
        for k in range(n):
            _decide_kernel[(nb,)](a, piv, skip, x, w, n, k, CPLX=cplx, HERM=herm, BLOCK=BLOCK)
            if k + 1 < n:
                t = triton.cdiv(n - k - 1, TILE)
                _update_kernel[(t, t, nb)](a, skip, x, w, n, k, CPLX=cplx, HERM=herm, TILE=TILE)
        _tril_kernel[(triton.cdiv(n * n, COPY_BLOCK), nb)](a, n, CPLX=cplx, BLOCK=COPY_BLOCK)
    result = (ld.reshape(*batch, n, n), piv.reshape(*batch, n))
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return out
    return result
