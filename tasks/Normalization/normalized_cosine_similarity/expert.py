"""Expert kernel for Normalization/normalized_cosine_similarity: one fused pass per row.

Normalising x by a scalar d and then taking a cosine similarity only rescales the row sums, so one
pass accumulates the p-norms and the raw dot product and squared norms of both inputs:
cos = (dot / (d1 d2)) / sqrt(max(ss1 / d1^2 * ss2 / d2^2, eps^2)), with d = max(||x||_p, eps_norm).
The reduced dim is moved last on the host (a view plus, when needed, a contiguous copy).
"""

import torch
import triton
import triton.language as tl

BLOCK_R = 4
BLOCK_D = 512


@triton.jit
def _pnorm_terms(x, P: tl.constexpr, p):
    ax = tl.abs(x)
    if P == 2:
        return ax * ax
    elif P == 1:
        return ax
    else:
        return tl.where(ax > 0, tl.exp2(p * tl.log2(tl.maximum(ax, 1e-30))), 0.0)


@triton.jit
def _cos_kernel(a_ptr, b_ptr, out_ptr, rows, d, p, eps_sim, eps_norm,
                P: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):  # fmt: skip
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < rows
    dot = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    ss1 = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    ss2 = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    pn1 = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    pn2 = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    for start in range(0, d, BLOCK_D):
        cols = start + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < d)
        offs = r[:, None] * d + cols[None, :]
        x1 = tl.load(a_ptr + offs, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(b_ptr + offs, mask=m, other=0.0).to(tl.float32)
        dot += x1 * x2
        ss1 += x1 * x1
        ss2 += x2 * x2
        if P != 2:
            pn1 += _pnorm_terms(x1, P, p)
            pn2 += _pnorm_terms(x2, P, p)
    dot_r = tl.sum(dot, axis=1)
    ss1_r = tl.sum(ss1, axis=1)
    ss2_r = tl.sum(ss2, axis=1)
    if P == 2:
        n1 = tl.sqrt(ss1_r)
        n2 = tl.sqrt(ss2_r)
    elif P == 1:
        n1 = tl.sum(pn1, axis=1)
        n2 = tl.sum(pn2, axis=1)
    else:
        s1 = tl.sum(pn1, axis=1)
        s2 = tl.sum(pn2, axis=1)
        n1 = tl.where(s1 > 0, tl.exp2(tl.log2(tl.maximum(s1, 1e-30)) / p), 0.0)
        n2 = tl.where(s2 > 0, tl.exp2(tl.log2(tl.maximum(s2, 1e-30)) / p), 0.0)
    d1 = tl.maximum(n1, eps_norm)
    d2 = tl.maximum(n2, eps_norm)
    na = ss1_r / (d1 * d1)
    nb = ss2_r / (d2 * d2)
    denom = tl.sqrt(tl.maximum(na * nb, eps_sim * eps_sim))
    cos = (dot_r / (d1 * d2)) / denom
    tl.store(out_ptr + r, cos, mask=rmask)


def normalized_cosine_similarity(x1, x2, dim=1, eps_similarity=1e-08, p_norm=2, eps_norm=1e-12):
    x1, x2 = torch.broadcast_tensors(x1, x2)
    dim = dim % x1.dim()
    a = x1.movedim(dim, -1).contiguous()
    b = x2.movedim(dim, -1).contiguous()
    d = a.shape[-1]
    out_shape = a.shape[:-1]
    rows = a.numel() // d if d else 0
    out = torch.empty(out_shape, dtype=x1.dtype, device=x1.device)
    if rows == 0:
        return out
    p = float(p_norm)
    mode = 2 if p == 2.0 else (1 if p == 1.0 else 0)
    _cos_kernel[(triton.cdiv(rows, BLOCK_R),)](a, b, out, rows, d, p, float(eps_similarity), float(eps_norm),
                                              P=mode, BLOCK_R=BLOCK_R, BLOCK_D=BLOCK_D)  # fmt: skip
    return out
