"""Expert kernels for Fusion/fused_qr_solve: least squares by blocked Householder QR of [A | b], then back
substitution.

kbx/experts/householder.py factors the first n columns of W = [A | b] PANEL (16) at a time: one program
forms a panel's reflectors and its T (H_j0 ... H_j0+15 = I - V T V^T), then one launch applies the block
reflector to every later column, b's included, as tl.dot products, C -= V (T^T (V^T C)); so the right-hand
sides become Q^T b without Q ever being formed. Back substitution on R x = (Q^T b)[:n] runs one launch per
16 rows, bottom up: every program solves the 16 x 16 diagonal block in registers, then subtracts that
block's contribution from its rows above with a tl.dot. All math is fp32. 3 n / 16 launches (96 at n512).

Speed: on an H100 (2026-12-05, docs/BENCHMARKS.md, the full-suite run at 2268acc), 5.92 / 21.3 / 80.8 / 324 ms
at n = 512 / 1024 / 2048 / 4096 against eager's 2.57 / 6.30 / 15.8 / 47.3 ms (cuSOLVER's geqrf, ormqr, trsm),
0.25x; one reflector at a time (about 3n launches) it was 31.3 / 72.6 / 141 / 731 ms, 0.08x (2026-11-27). The
one-program panel factorization bounds it (16 dependent column sweeps on one SM per panel): on an H200
(2026-12-04) the panel's knobs moved qr n4096 from 255 ms (32 columns, 64 rows a step, 4 warps) to 124 ms (16,
128, 8), while the block update's tile (64 or 128 rows) changed nothing. cuSOLVER factors its panels recursively
over many SMs.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.householder import PANEL, householder

SOLVE_ROWS, SOLVE_RHS = 64, 16  # back-substitution tile: rows above the block x right-hand sides


@triton.jit(do_not_specialize=["i0"])
def _back_substitute_kernel(w_ptr, x_ptr, n, ld, nrhs, i0, NB: tl.constexpr, ROWS: tl.constexpr,
                            RHS: tl.constexpr):  # fmt: skip
    """Rows i0..i0+NB of x: every program solves R[blk, blk] x_blk = c_blk in registers (NB x RHS, cheap to
    repeat) and the first stores it; then each subtracts R[rows, blk] x_blk from its rows above i0 (c = W[:n, n:])."""
    rhs = tl.program_id(1) * RHS + tl.arange(0, RHS)
    hm = rhs < nrhs
    idx = tl.arange(0, NB)
    blk = i0 + idx.to(tl.int64)
    bm = blk < n
    diag = tl.load(w_ptr + blk[:, None] * ld + blk[None, :], mask=bm[:, None] & bm[None, :], other=0.0)
    c = tl.load(w_ptr + blk[:, None] * ld + n + rhs[None, :], mask=bm[:, None] & hm[None, :], other=0.0)
    for t in range(0, NB):
        jj = NB - 1 - t
        r_jj = tl.sum(tl.sum(tl.where((idx[:, None] == jj) & (idx[None, :] == jj), diag, 0.0), axis=1), axis=0)
        x_jj = tl.sum(tl.where(idx[:, None] == jj, c, 0.0), axis=0) / tl.where(i0 + jj < n, r_jj, 1.0)
        c = tl.where(idx[:, None] == jj, x_jj[None, :], c - tl.where(idx < jj, tl.sum(tl.where(
            idx[None, :] == jj, diag, 0.0), axis=1), 0.0)[:, None] * x_jj[None, :])  # fmt: skip
    if tl.program_id(0) == 0:
        tl.store(x_ptr + blk[:, None] * nrhs + rhs[None, :], c, mask=bm[:, None] & hm[None, :])
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rm = rows < i0
    u = tl.load(w_ptr + rows[:, None] * ld + blk[None, :], mask=rm[:, None] & bm[None, :], other=0.0)
    ptrs = w_ptr + rows[:, None] * ld + n + rhs[None, :]
    m2 = rm[:, None] & hm[None, :]
    updated = tl.load(ptrs, mask=m2, other=0.0) - tl.dot(u, c, input_precision="ieee")
    tl.debug_barrier()  # load before store: kbx/experts/householder.py, READ_BEFORE_WRITE
    tl.store(ptrs, updated, mask=m2)


def fused_qr_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if A.dim() != 2 or b.dim() != 2 or b.shape[0] != A.shape[0] or A.shape[0] < A.shape[1]:
        raise RuntimeError(f"fused_qr_solve: expected A (m, n) with m >= n and b (m, k), got {tuple(A.shape)} "
                           f"and {tuple(b.shape)}")  # fmt: skip
    (m, n), k = A.shape, b.shape[1]
    w = torch.empty((1, m, n + k), dtype=torch.float32, device=A.device)  # [A | b], eliminated in place
    w[0, :, :n].copy_(A)
    w[0, :, n:].copy_(b)
    x = torch.empty((n, k), dtype=torch.float32, device=A.device)
    if n == 0 or k == 0:
        return x
    householder(w, n)  # R in W[:n, :n], Q^T b in W[:, n:]
    for i0 in range((n - 1) // PANEL * PANEL, -1, -PANEL):
        grid = (max(triton.cdiv(i0, SOLVE_ROWS), 1), triton.cdiv(k, SOLVE_RHS))
        _back_substitute_kernel[grid](w, x, n, n + k, k, i0, NB=PANEL, ROWS=SOLVE_ROWS, RHS=SOLVE_RHS)
    return x
