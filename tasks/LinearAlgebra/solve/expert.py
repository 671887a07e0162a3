"""Expert: blocked LU with partial pivoting of [A | B], then blocked back substitution (kbx.experts.lu).

Per panel of NB columns one program factors the panel (pivot search, row swap, multipliers), a parallel
kernel forms U12 = L11^-1 A12 (right-hand sides included) and a tiled IEEE-fp32 tl.dot kernel updates the
trailing block; the back substitution goes up in blocks of NB rows (a parallel diagonal-block solve, then a
tl.dot update of the right-hand sides above). About 5 n / NB launches and one host sync (the zero-pivot
flag), against 3 n launches and a full re-read of the trailing block per column before.

Speed: the panel (one program per NB columns, sequential by nature) bounds large n; eager calls cuSOLVER's
getrf / getrs, whose panels are recursive and whose updates run at GEMM speed.
"""

import torch

from kbx.experts.lu import lu_solve


def solve(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    if A.dim() != 2 or A.shape[0] != A.shape[1]:
        raise RuntimeError(f"solve: A must be a square matrix, got shape {tuple(A.shape)}")
    n = A.shape[0]
    if B.shape[0] != n or B.dim() not in (1, 2):
        raise RuntimeError(f"solve: B of shape {tuple(B.shape)} does not match A of shape {tuple(A.shape)}")
    x = lu_solve(A, B.reshape(n, -1))
    return x.reshape(B.shape).to(A.dtype)
