"""Expert kernels for LinearAlgebra/det: right-looking LU elimination with partial pivoting on a scratch copy.

For each column k, a one-program kernel picks the pivot (largest |entry| in rows k..), swaps it into row k, records U[k, k] and the permutation sign; a second kernel applies
the rank-1 update to the trailing block (rows and columns > k), tiled over a 2-D grid. Column k and
row k are only read by that update, so its programs never race. A last kernel multiplies the
recorded diagonal and sign. Exactly zero pivots (singular input) give multipliers of 0, so the
determinant comes out 0 instead of NaN. All math is fp32. Unblocked, it re-reads the trailing block
every step (O(n^3) memory traffic, 2n launches), so a blocked LU would be faster at large n.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 20.2 / 48.8 / 71.1 / 216 ms at n = 512 / 1024 / 2048 / 4096
against eager's 0.98 / 2.07 / 4.88 / 12.5 ms (cuSOLVER's blocked getrf), 0.05x. Launch-bound: 2n + 1 launches
(1,025 at n512: 20 us each). The blocked LU of kbx/experts/lu.py needs about 5 n / NB launches; its race
between warps is fixed (H100, 2026-11-27: a solve takes 11.9 ms at n1024, 139 ms at n4096), but it does not
keep the pivots' sign a determinant needs yet, so it is not used here.
"""

import torch
import triton

from kbx.experts.elimination import PIVOT_BLOCK, TILE_M, TILE_N, pivot_kernel, product_kernel, update_kernel


def det(A: torch.Tensor) -> torch.Tensor:
    n = A.shape[-1]
    if A.dim() != 2 or A.shape[-2] != n:
        raise RuntimeError(f"det: expected a square matrix, got shape {tuple(A.shape)}")
    w = A.to(torch.float32).reshape(1, n, n).clone()  # scratch copy, eliminated in place
    result = torch.empty((1,), dtype=torch.float32, device=A.device)
    if n:
        diag = torch.empty((1, n), dtype=torch.float32, device=A.device)
        sign = torch.ones((1,), dtype=torch.float32, device=A.device)
        for k in range(n):
            pivot_kernel[(1,)](w, diag, sign, n, k, PIVOT=True, BLOCK=PIVOT_BLOCK)
            rest = n - k - 1
            if rest:
                grid = (triton.cdiv(rest, TILE_M), triton.cdiv(rest, TILE_N), 1)
                update_kernel[grid](w, n, k, TILE_M=TILE_M, TILE_N=TILE_N)
        product_kernel[(1,)](diag, sign, result, n, BLOCK=PIVOT_BLOCK)
    else:
        result.fill_(1.0)  # determinant of a 0x0 matrix
    return result.reshape(()).to(A.dtype)
