"""Expert kernels for LinearAlgebra/qr: blocked Householder QR (compact WY) on a scratch copy, Q formed backwards.

kbx/experts/householder.py factors the columns PANEL (16) at a time: one program per matrix forms a panel's
reflectors and its T (H_j0 ... H_j0+15 = I - V T V^T), then one launch applies the block reflector to every
trailing column as tl.dot products, C -= V (T^T (V^T C)). R is the eliminated matrix's upper part (exact
zeros below the diagonal by construction). Q = H_0 (H_1 (... I)) is formed backwards, one block apply per
panel on an identity (`form_q`). The math runs in A's dtype (fp32 or fp64); batches run side by side.
About 3 p / 16 + 1 launches for p = min(m, n) (97 at n512, 769 at n4096).

Speed: on an H100 (2026-12-05, docs/BENCHMARKS.md, the full-suite run at 2268acc), 3.44 / 8.70 / 31.1 / 123 ms
at n = 512 / 1024 / 2048 / 4096 against eager's 1.89 / 4.52 / 11.0 / 29.1 ms (cuSOLVER's blocked geqrf and
orgqr), 0.39x; one reflector at a time (about 3n launches, the trailing block read twice per column) it was 39.8
/ 61.6 / 195 / 486 ms, 0.06x (2026-11-27). The one-program panel factorization bounds it (16 dependent column
sweeps on one SM per panel): on an H200 (2026-12-04) the panel's knobs moved qr n4096 from 255 ms (32 columns,
64 rows a step, 4 warps) to 124 ms (16, 128, 8), while the block update's tile (64 or 128 rows) changed nothing.
cuSOLVER factors its panels recursively over many SMs.
"""

import torch

from kbx.experts.householder import form_q, householder

MODES = ("reduced", "complete", "r")


def qr(A: torch.Tensor, mode: str = "reduced", out=None):
    if mode not in MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           "'r', or 'complete'")  # fmt: skip
    if A.dim() < 2:
        raise RuntimeError(f"qr: A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    dtype = A.dtype if A.dtype in (torch.float32, torch.float64) else torch.float32
    w = A.to(dtype).reshape(-1, m, n).clone()  # scratch copy, eliminated in place
    p = min(m, n)
    refl = householder(w)
    rrows = m if mode == "complete" else p
    r = w[:, :rrows, :].contiguous()
    if mode == "r":
        q = torch.empty((0,), dtype=dtype, device=A.device)
    else:
        qcols = m if mode == "complete" else p
        q = form_q(refl, qcols).reshape(*batch, m, qcols)
    r = r.reshape(*batch, rrows, n)
    if out is not None:
        out[0].copy_(q)
        out[1].copy_(r)
        return out
    return q, r
