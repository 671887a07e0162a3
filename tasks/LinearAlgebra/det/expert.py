"""Expert kernels for LinearAlgebra/det: blocked LU with partial pivoting (kbx/experts/lu.py) on a scratch copy, then
the product of U's diagonal with the sign of the row permutation.

lu_factor factors NB columns at a time: one program factors the panel (pivot search, row swap, multipliers)
and counts its row swaps, a parallel kernel forms U12 and a tiled tl.dot kernel (IEEE fp32) updates the
trailing block, about 3 n / NB launches in all. A last kernel multiplies U's diagonal, its sign flipped once per
swap. Exactly zero pivots (singular input) give multipliers of 0, so the determinant comes out 0 instead of
NaN. All math is fp32.

SPEED
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
