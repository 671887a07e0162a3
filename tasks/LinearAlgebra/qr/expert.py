"""Expert kernels for LinearAlgebra/qr: Householder QR, one reflector at a time, on a scratch copy.

For each column k < min(m, n), a one-program kernel per matrix reads x = A[k:, k], forms the reflector
H = I - beta v v^T with v = x - alpha e1 and alpha = -sign(x0) ||x|| (H x = alpha e1; beta = 0 when x is
already zero below its first entry), stores v and beta, and writes alpha over A[k, k] and zeros below
it. A tiled kernel then applies H to the trailing columns: each program owns a block of columns, forms
v^T A[k:, cols] over all rows, and subtracts beta v (v^T A). R is the eliminated matrix's upper part
(exact zeros below the diagonal by construction). Q is accumulated backwards, Q = H_0 (H_1 (... I)),
with the same apply kernel on an identity (only columns >= j change under H_j). The math runs in A's
dtype (fp32 or fp64); batches run side by side on the grid's second axis. Unblocked, it reads the
trailing block twice per column (O(m n^2) memory traffic, 2 launches per column); a blocked WY form
would turn the updates into matrix products.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 39.8 / 61.6 / 195 / 486 ms at n = 512 / 1024 / 2048 / 4096
against eager's 1.88 / 4.49 / 10.8 / 28.9 ms (cuSOLVER's blocked geqrf and orgqr), 0.06x. About 3n launches
(reflector, update, and the update again for Q: 1,536 at n512, 26 us each, launch-bound); at n4096 the
trailing block read twice per column adds the rest. A blocked WY form would need n / NB launches of tl.dot.
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
