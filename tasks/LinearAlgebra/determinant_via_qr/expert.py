"""Expert kernels for LinearAlgebra/determinant_via_qr: det(A) = det(Q) prod(diag(R)) from a blocked Householder QR.

kbx/experts/householder.py factors the columns PANEL (16) at a time: one program per matrix forms a panel's
reflectors and its T (H_j0 ... H_j0+15 = I - V T V^T), then one launch applies the block reflector to every
trailing column as tl.dot products, C -= V (T^T (V^T C)). Q is never formed: every proper reflector has
determinant -1, so det(Q) = (-1)^(number of reflectors with beta != 0), and a last one-program kernel
multiplies that sign by R's diagonal, in float64 (its partial products leave fp32's range at n4096). The
rest of the math runs in A's dtype (fp32 or fp64). 2 n / 16 + 1 launches (65 at n512, 513 at n4096).

Speed: on an H100 (2026-12-05, docs/BENCHMARKS.md, the full-suite run at 2268acc), 2.23 / 7.40 / 26.7 / 104 ms
at n = 512 / 1024 / 2048 / 4096 against eager's 2.87 / 6.64 / 15.8 / 41.5 ms (cuSOLVER's blocked geqrf and
orgqr, then getrf for det(Q)), 0.72x; one reflector at a time (2n launches) it was 16.4 / 34.5 / 66.2 / 242 ms,
0.19x (2026-11-27). Eager, unlike the expert, also forms Q. The one-program panel factorization bounds it (16
dependent column sweeps on one SM per panel): on an H200 (2026-12-04) the panel's knobs moved qr n4096 from 255
ms (32 columns, 64 rows a step, 4 warps) to 124 ms (16, 128, 8), while the block update's tile (64 or 128 rows)
changed nothing. cuSOLVER factors its panels recursively over many SMs.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.householder import householder

PRODUCT_BLOCK = 1024  # diagonal entries per step of the product

MODES = ("reduced", "complete")


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _det_kernel(w_ptr, beta_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """The product in float64: R's diagonal of a determinant of order one still runs far past fp32's
    range on the way (the task's n4096 input: partial products up to 3.5e55), which gave NaN."""
    acc = tl.load(w_ptr).to(tl.float64)  # R[0, 0]
    flips = tl.where(tl.load(beta_ptr) != 0, 1, 0)
    for start in range(1, n, BLOCK):
        offs = start + tl.arange(0, BLOCK).to(tl.int64)
        mask = offs < n
        d = tl.load(w_ptr + offs * n + offs, mask=mask, other=1.0).to(tl.float64)
        acc = acc * tl.reduce(d, 0, _mul)
        flips += tl.sum(tl.where(mask & (tl.load(beta_ptr + offs, mask=mask, other=0.0) != 0), 1, 0), axis=0)
    tl.store(out_ptr, tl.where(flips % 2 == 1, -acc, acc).to(out_ptr.dtype.element_ty))


def determinant_via_qr(A: torch.Tensor, *, mode: str = "reduced", out=None) -> torch.Tensor:
    if mode not in MODES:
        raise RuntimeError(f"determinant_via_qr: mode must be 'reduced' or 'complete', got {mode!r}")
    n = A.shape[-1]
    if A.dim() != 2 or A.shape[0] != n:
        raise RuntimeError(f"determinant_via_qr: expected a square matrix, got shape {tuple(A.shape)}")
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    w = A.to(dtype).reshape(1, n, n).clone()  # scratch copy, eliminated in place
    result = torch.ones((1,), dtype=dtype, device=A.device)  # det of a 0x0 matrix is 1
    if n:
        beta = householder(w).beta
        _det_kernel[(1,)](w, beta, result, n, BLOCK=PRODUCT_BLOCK)
    result = result.reshape(())
    return out.copy_(result) if out is not None else result
