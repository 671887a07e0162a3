"""Expert kernels for LinearAlgebra/det: blocked LU with partial pivoting (kbx/experts/lu.py) on a scratch copy, then
the product of U's diagonal with the sign of the row permutation.

lu_factor factors NB columns at a time: one program factors the panel (pivot search, row swap, multipliers)
and counts its row swaps, a parallel kernel forms U12 and a tiled tl.dot kernel (IEEE fp32) updates the
trailing block, about 3 n / NB launches in all. A last kernel multiplies U's diagonal, its sign flipped once per
swap. Exactly zero pivots (singular input) give multipliers of 0, so the determinant comes out 0 instead of
NaN. All math is fp32.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 2.19 / 7.68 / 24.3 / 97.1 ms at n
= 512 / 1024 / 2048 / 4096 against eager's 0.87 / 1.89 / 4.58 / 11.8 ms (cuSOLVER's blocked getrf), 0.22x;
eliminating one column at a time (2n + 1 launches) it was 0.045x. Now the panel bounds it: one program factors each
32-column panel (per column a pivot search, a row swap and an update pass over the panel's rows) while the other SMs
wait, 128 panels at n4096, about 0.75 ms each; eager's getrf factors its panels recursively and updates at GEMM
speed. 256 rows per panel step beat 128, 512 and 1024 (kbx/experts/lu.py). Finding the next column's pivot inside
the update pass, one pass per column instead of two, was slower (153 against 97 ms at n4096): the reduction it adds
to every row block costs more than the pass it saves.
"""

import torch

from kbx.experts.lu import determinant


def det(A: torch.Tensor) -> torch.Tensor:
    n = A.shape[-1]
    if A.dim() != 2 or A.shape[-2] != n:
        raise RuntimeError(f"det: expected a square matrix, got shape {tuple(A.shape)}")
    result = torch.ones((1,), dtype=torch.float32, device=A.device)  # 1: the determinant of a 0x0 matrix
    if n:
        determinant(A.to(torch.float32).contiguous(), result)
    return result.reshape(()).to(A.dtype)
