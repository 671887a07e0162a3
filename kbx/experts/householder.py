"""Blocked Householder QR in Triton (the compact WY form): the kernels the expert solutions of
`LinearAlgebra/qr`, `determinant_via_qr`, `svd` and `Fusion/fused_qr_solve` share (each expert imports them).

A = H_0 H_1 ... H_{p-1} R with H_k = I - beta_k v_k v_k^T, v_k = x - alpha e1 and alpha = -sign(x0) ||x||
for x = A[k:, k] (H_k x = alpha e1; beta_k = 0, H_k = I, when x is already zero below its first entry).
Columns are factored PANEL at a time, in two launches:
- one program per matrix factors the panel (`_panel_kernel`): per column it forms the reflector and applies
  it to the panel's later columns, in one sweep over the rows below the diagonal that also gathers the
  next column's norm and its products with the panel; then it forms the panel's T, the upper triangle with
  H_j0 ... H_j0+w-1 = I - V T V^T, from V^T V;
- one launch applies the panel's block reflector to every trailing column (`_block_apply_kernel`):
  C -= V (T^T (V^T C)), tl.dot products in IEEE precision, each program owning a block of columns.
Q = H_0 ... H_{p-1} I is formed backwards with the same block apply, one launch per panel (`form_q`).
So a factorization takes 2 p / PANEL launches. One reflector at a time took 2 per column, and the launch
rate bounded it: 1,024 launches at n512, 16 us each, on an H100 (2026-11-27, docs/BENCHMARKS.md); the panel
program's sequential sweeps bound this one (PANEL's comment).

READ_BEFORE_WRITE (as in kbx/experts/lu.py): every in-place update loads what it needs, waits at a
barrier, then stores, because Triton may hold one value in several threads and a replica that loads
after another's store would apply the update twice; the interpreter runs one thread and cannot show it.
"""

import torch
import triton
import triton.language as tl

# The panel program (one SM) bounds the factorization. On an H200 (2026-12-04, docs/BENCHMARKS.md), qr at
# n = 1024 / 4096 took 8.7 / 124 ms with 16 columns, 128 rows a step and 8 warps; 17.0 / 255 with 32, 64 and 4;
# 9.1 / 122 with 16, 256 and 8 (interpreter: 256, fewer steps); 64 columns spilled (170 / 2,312 with 128 rows).
PANEL = 16  # columns per panel: reflectors formed by one program before the block update (tl.dot needs 16)
PANEL_ROWS = {True: 128, False: 256}  # rows per step of the panel program, GPU / CPU interpreter
PANEL_WARPS = 8
APPLY_ROWS, APPLY_COLS = 64, 32  # block-apply tile: rows streamed x columns owned by one program (128 rows: same)
IDENTITY_BLOCK = 1024


@triton.jit(do_not_specialize=["j0", "width", "panel"])
def _panel_kernel(a_ptr, v_ptr, beta_ptr, t_ptr, m, lda, a_bstride, ldv, v_bstride, p, j0, width, panel,
                  n_panels, NB: tl.constexpr, ROWS: tl.constexpr):  # fmt: skip
    """Factor A[j0:, j0:j0+width] of matrix program_id(0): reflectors into V[:, j0:j0+width] and beta, R's
    part into A, then T into t_ptr's slot `panel`. Step kk = -1 only gathers column j0's sums."""
    b = tl.program_id(0).to(tl.int64)
    a = a_ptr + b * a_bstride
    v = v_ptr + b * v_bstride
    idx = tl.arange(0, NB)
    cols = j0 + idx.to(tl.int64)
    cm = idx < width
    row_k = tl.zeros([NB], dtype=a_ptr.dtype.element_ty)  # A[k, panel] before reflector k
    tail_sq = tl.sum(row_k, axis=0)  # ||A[k+1:, k]||^2
    tail_dot = tl.zeros([NB], dtype=a_ptr.dtype.element_ty)  # A[k+1:, k]^T A[k+1:, panel]
    for kk in range(-1, width):
        k = j0 + kk
        on_k = idx == kk
        x0 = tl.sum(tl.where(on_k, row_k, 0.0), axis=0)
        norm = tl.sqrt(x0 * x0 + tail_sq)
        alpha = tl.where(x0 >= 0, -norm, norm)
        alpha = tl.where(tail_sq == 0, x0, alpha)  # nothing to eliminate: H = I
        v0 = x0 - alpha
        beta = tl.where(tail_sq == 0, 0.0, 2.0 / tl.where(tail_sq == 0, 1.0, v0 * v0 + tail_sq))
        w = tl.where(cm & (idx > kk), beta * (v0 * row_k + tail_dot), 0.0)  # beta v^T A[k:, c]
        if kk >= 0:
            tl.store(a + k * lda + cols, tl.where(on_k, alpha, row_k - v0 * w), mask=cm)
            tl.store(v + k * ldv + k, v0)
            tl.store(beta_ptr + b * p + k, beta)
        next_k = k + 1
        on_next = idx == kk + 1
        sq = tl.zeros([ROWS], dtype=a_ptr.dtype.element_ty)
        dots = tl.zeros([ROWS, NB], dtype=a_ptr.dtype.element_ty)
        row_next = tl.zeros([NB], dtype=a_ptr.dtype.element_ty)
        for start in range(next_k, m, ROWS):
            rows = start + tl.arange(0, ROWS).to(tl.int64)
            rm = rows < m
            ptrs = a + rows[:, None] * lda + cols[None, :]
            m2 = rm[:, None] & cm[None, :]
            tile = tl.load(ptrs, mask=m2, other=0.0)
            x = tl.sum(tl.where(on_k[None, :], tile, 0.0), axis=1)
            tile = tl.where(on_k[None, :], 0.0, tile - x[:, None] * w[None, :])
            tl.debug_barrier()  # see READ_BEFORE_WRITE
            if kk >= 0:
                tl.store(ptrs, tile, mask=m2)
                tl.store(v + rows * ldv + k, x, mask=rm)
            below = rm & (rows > next_k)
            xn = tl.where(below, tl.sum(tl.where(on_next[None, :], tile, 0.0), axis=1), 0.0)
            sq += xn * xn
            dots += xn[:, None] * tile
            row_next += tl.sum(tl.where((rows == next_k)[:, None], tile, 0.0), axis=0)
        tl.debug_barrier()  # the next step reads what this one stored
        row_k = row_next
        tail_sq = tl.sum(sq, axis=0)
        tail_dot = tl.sum(dots, axis=0)
    # T: column kk is -beta_kk T[:, :kk] (V[:, :kk]^T v_kk), diagonal beta_kk (Schreiber and Van Loan)
    gram = tl.zeros([NB, NB], dtype=a_ptr.dtype.element_ty)
    for start in range(j0, m, ROWS):
        rows = start + tl.arange(0, ROWS).to(tl.int64)
        vt = tl.load(v + rows[:, None] * ldv + cols[None, :], mask=(rows < m)[:, None] & cm[None, :], other=0.0)
        gram += tl.dot(tl.trans(vt), vt, input_precision="ieee")
    betas = tl.load(beta_ptr + b * p + cols, mask=cm, other=0.0)
    t = tl.zeros([NB, NB], dtype=a_ptr.dtype.element_ty)
    for kk in range(0, width):
        g = tl.where(idx < kk, tl.sum(tl.where(idx[None, :] == kk, gram, 0.0), axis=1), 0.0)
        beta_kk = tl.sum(tl.where(idx == kk, betas, 0.0), axis=0)
        above = -beta_kk * tl.sum(t * g[None, :], axis=1)
        column = tl.where(idx < kk, above, tl.where(idx == kk, beta_kk, 0.0))
        t = tl.where(idx[None, :] == kk, column[:, None], t)
    t_base = t_ptr + (b * n_panels + panel) * NB * NB
    tl.store(t_base + idx[:, None] * NB + idx[None, :], t)


@triton.jit(do_not_specialize=["j0", "width", "panel", "col0", "ncols"])
def _block_apply_kernel(c_ptr, v_ptr, t_ptr, m, ldc, c_bstride, ldv, v_bstride, j0, width, panel, n_panels,
                        col0, ncols, TRANSPOSE_T: tl.constexpr, NB: tl.constexpr, ROWS: tl.constexpr,
                        COLS: tl.constexpr):  # fmt: skip
    """C[j0:, cols] -= V (T^T (V^T C)) (TRANSPOSE_T: H_j0+w-1 ... H_j0 C, the factorization) or V (T (V^T C))
    (H_j0 ... H_j0+w-1 C, forming Q) for panel `panel` of matrix program_id(1), program_id(0)'s columns."""
    b = tl.program_id(1).to(tl.int64)
    c = c_ptr + b * c_bstride
    v = v_ptr + b * v_bstride
    idx = tl.arange(0, NB)
    vc = j0 + idx.to(tl.int64)
    vm = idx < width
    cols = col0 + tl.program_id(0).to(tl.int64) * COLS + tl.arange(0, COLS)
    cm = cols < col0 + ncols
    vtc = tl.zeros([NB, COLS], dtype=c_ptr.dtype.element_ty)
    for start in range(j0, m, ROWS):
        rows = start + tl.arange(0, ROWS).to(tl.int64)
        rm = rows < m
        vt = tl.load(v + rows[:, None] * ldv + vc[None, :], mask=rm[:, None] & vm[None, :], other=0.0)
        x = tl.load(c + rows[:, None] * ldc + cols[None, :], mask=rm[:, None] & cm[None, :], other=0.0)
        vtc += tl.dot(tl.trans(vt), x, input_precision="ieee")
    t = tl.load(t_ptr + (b * n_panels + panel) * NB * NB + idx[:, None] * NB + idx[None, :])
    if TRANSPOSE_T:
        t = tl.trans(t)
    w = tl.dot(t, vtc, input_precision="ieee")
    for start in range(j0, m, ROWS):
        rows = start + tl.arange(0, ROWS).to(tl.int64)
        rm = rows < m
        vt = tl.load(v + rows[:, None] * ldv + vc[None, :], mask=rm[:, None] & vm[None, :], other=0.0)
        ptrs = c + rows[:, None] * ldc + cols[None, :]
        m2 = rm[:, None] & cm[None, :]
        x = tl.load(ptrs, mask=m2, other=0.0) - tl.dot(vt, w, input_precision="ieee")
        tl.debug_barrier()  # see READ_BEFORE_WRITE
        tl.store(ptrs, x, mask=m2)


@triton.jit
def _identity_kernel(q_ptr, m, ncols, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    one = tl.where((offs // ncols) == (offs % ncols), 1.0, 0.0)
    tl.store(q_ptr + b * m * ncols + offs, one.to(q_ptr.dtype.element_ty), mask=offs < m * ncols)


class Reflectors:
    """A factorization's reflectors: V (nb, m, p), zero above each column's diagonal entry; beta (nb, p);
    T (nb, panels, PANEL, PANEL), one triangle per panel."""

    def __init__(self, v: torch.Tensor, beta: torch.Tensor, t: torch.Tensor):
        self.v, self.beta, self.t = v, beta, t

    @property
    def count(self) -> int:
        return self.v.shape[2]

    def panels(self):
        """(index, first column, width) of each panel, first to last."""
        return [(i, j0, min(PANEL, self.count - j0)) for i, j0 in enumerate(range(0, self.count, PANEL))]


def _apply_panel(c: torch.Tensor, refl: Reflectors, panel: int, j0: int, width: int, col0: int,
                 transpose_t: bool) -> None:  # fmt: skip
    nb, m, ldc = c.shape
    ncols = ldc - col0
    if ncols <= 0:
        return
    v, t = refl.v, refl.t
    grid = (triton.cdiv(ncols, APPLY_COLS), nb)
    _block_apply_kernel[grid](c, v, t, m, ldc, m * ldc, v.shape[2], m * v.shape[2], j0, width, panel, t.shape[1],
                              col0, ncols, TRANSPOSE_T=transpose_t, NB=PANEL, ROWS=APPLY_ROWS, COLS=APPLY_COLS)  # fmt: skip


def householder(w: torch.Tensor, p: int | None = None) -> Reflectors:
    """Factor the first p columns (default min(m, n)) of w (nb, m, n) in place: R in their upper part,
    zeros below it, and every later column (a right-hand side too) multiplied by Q^T."""
    nb, m, n = w.shape
    p = min(m, n) if p is None else p
    n_panels = triton.cdiv(p, PANEL)
    refl = Reflectors(torch.zeros((nb, m, p), dtype=w.dtype, device=w.device),
                      torch.zeros((nb, p), dtype=w.dtype, device=w.device),
                      torch.zeros((nb, n_panels, PANEL, PANEL), dtype=w.dtype, device=w.device))  # fmt: skip
    for panel, j0, width in refl.panels():
        _panel_kernel[(nb,)](w, refl.v, refl.beta, refl.t, m, n, m * n, p, m * p, p, j0, width, panel, n_panels,
                             NB=PANEL, ROWS=PANEL_ROWS[w.is_cuda], num_warps=PANEL_WARPS)  # fmt: skip
        _apply_panel(w, refl, panel, j0, width, j0 + width, transpose_t=True)
    return refl


def form_q(refl: Reflectors, ncols: int) -> torch.Tensor:
    """The first ncols columns of Q = H_0 ... H_{p-1} (nb, m, ncols): the identity's, with the panels applied
    last to first; columns left of a panel are still the identity's there, so each apply starts at it."""
    nb, m, _ = refl.v.shape
    q = torch.empty((nb, m, ncols), dtype=refl.v.dtype, device=refl.v.device)
    if q.numel() == 0:
        return q
    _identity_kernel[(triton.cdiv(m * ncols, IDENTITY_BLOCK), nb)](q, m, ncols, BLOCK=IDENTITY_BLOCK)
    for panel, j0, width in reversed(refl.panels()):
        _apply_panel(q, refl, panel, j0, width, j0, transpose_t=False)
    return q
