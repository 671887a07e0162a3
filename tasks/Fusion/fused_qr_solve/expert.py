"""Expert kernels for Fusion/fused_qr_solve: least squares via Householder QR of [A | b], then back substitution.

For each column k < n of the augmented matrix W = [A | b], kbx/experts/householder.py's one-program kernel
reads x = W[k:, k], forms the reflector H = I - beta v v^T with v = x - alpha e1 and alpha = -sign(x0) ||x||
(H x = alpha e1), and writes alpha over W[k, k]; its tiled kernel applies H to all later columns, b's
included (each program owns a block of columns: v^T W over all rows, then W -= beta v (v^T W)), so the
right-hand sides become Q^T b without Q ever being formed. Back substitution on R x = (Q^T b)[:n] then runs
one tiled launch per row.
All math is fp32. Unblocked: O(m n^2) memory traffic and about 3n launches.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 31.3 / 72.6 / 141 / 731 ms at n = 512 / 1024 / 2048 / 4096
against eager's 2.56 / 6.31 / 15.8 / 47.1 ms (cuSOLVER's geqrf, ormqr, trsm), 0.08x. About 3n launches (1,536 at
n512: 20 us each, launch-bound) and the trailing block read twice per column; a blocked WY form would need
n / NB launches of tl.dot.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.householder import REFLECT_BLOCK, apply, reflector_kernel

TILE_M, TILE_N = 64, 16  # back-substitution tile: rows above the current one x right-hand sides


@triton.jit
def _back_substitute_kernel(w_ptr, x_ptr, n, ld, nrhs, i, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    # x[i, :] = c[i, :] / R[i, i]; then c[r, :] -= R[r, i] * x[i, :] for the rows r < i (c = W[:n, n:])
    c = tl.program_id(1).to(tl.int64) * TILE_N + tl.arange(0, TILE_N)
    cmask = c < nrhs
    xi = tl.load(w_ptr + i * ld + n + c, mask=cmask, other=0.0) / tl.load(w_ptr + i * ld + i)
    if tl.program_id(0) == 0:
        tl.store(x_ptr + i * nrhs + c, xi, mask=cmask)
    rows = tl.program_id(0).to(tl.int64) * TILE_M + tl.arange(0, TILE_M)
    rmask = rows < i
    u = tl.load(w_ptr + rows * ld + i, mask=rmask, other=0.0)
    ptrs = w_ptr + rows[:, None] * ld + n + c[None, :]
    m2 = rmask[:, None] & cmask[None, :]
    rhs = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, rhs - u[:, None] * xi[None, :], mask=m2)


def fused_qr_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if A.dim() != 2 or b.dim() != 2 or b.shape[0] != A.shape[0] or A.shape[0] < A.shape[1]:
        raise RuntimeError(f"fused_qr_solve: expected A (m, n) with m >= n and b (m, k), got {tuple(A.shape)} "
                           f"and {tuple(b.shape)}")  # fmt: skip
    (m, n), k = A.shape, b.shape[1]
    ld = n + k
    w = torch.empty((1, m, ld), dtype=torch.float32, device=A.device)  # [A | b], eliminated in place
    w[0, :, :n].copy_(A)
    w[0, :, n:].copy_(b)
    x = torch.empty((n, k), dtype=torch.float32, device=A.device)
    if n == 0 or k == 0:
        return x
    v = torch.zeros((1, m, ld), dtype=torch.float32, device=A.device)  # reflectors; W's shape (row stride)
    beta = torch.zeros((1, m), dtype=torch.float32, device=A.device)
    for j in range(n):
        reflector_kernel[(1,)](w, v, beta, m, ld, m * ld, m * ld, j, BLOCK=REFLECT_BLOCK)
        apply(w, v, beta, j, j + 1, ld - j - 1)
    for i in range(n - 1, -1, -1):
        grid = (max(triton.cdiv(i, TILE_M), 1), triton.cdiv(k, TILE_N))
        _back_substitute_kernel[grid](w, x, n, ld, k, i, TILE_M=TILE_M, TILE_N=TILE_N)
    return x
