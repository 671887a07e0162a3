"""Expert kernels for Normalization/normalize_pairwise_distance: the first streams row tiles of x1 and x2
and writes d = ||x1 - x2||_p + eps per row; the second views d as (outer, L, inner) around dim_norm and, per
tile of (outer, inner) positions, reduces the p_norm over L and divides by max(norm, eps_norm)."""

import math

import torch
import triton
import triton.language as tl

BLOCK_R = 64
BLOCK_D_MAX = 128
BLOCK_L_MAX = 1024


@triton.jit
def _pow_abs(v, p, KIND: tl.constexpr):
    a = tl.abs(v)
    if KIND == 1:
        r = a
    elif KIND == 2:
        r = a * a
    else:
        r = tl.where(a > 0, tl.exp(p * tl.log(tl.where(a > 0, a, 1.0))), 0.0)
    return r


@triton.jit
def _root(s, inv_p, KIND: tl.constexpr):
    if KIND == 1:
        r = s
    elif KIND == 2:
        r = tl.sqrt(s)
    else:
        r = tl.where(s > 0, tl.exp(inv_p * tl.log(tl.where(s > 0, s, 1.0))), 0.0)
    return r


@triton.jit
def _distance_kernel(x1_ptr, x2_ptr, d_ptr, rows, D, p, inv_p, eps,
                     KIND: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):  # fmt: skip
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    rmask = r < rows
    acc = tl.zeros([BLOCK_R, BLOCK_D], dtype=tl.float32)
    for c0 in range(0, D, BLOCK_D):
        c = c0 + tl.arange(0, BLOCK_D).to(tl.int64)
        m = rmask[:, None] & (c < D)[None, :]
        a = tl.load(x1_ptr + r[:, None] * D + c[None, :], mask=m, other=0.0).to(tl.float32)
        b = tl.load(x2_ptr + r[:, None] * D + c[None, :], mask=m, other=0.0).to(tl.float32)
        acc += _pow_abs(a - b, p, KIND)
    d = _root(tl.sum(acc, axis=1), inv_p, KIND) + eps
    tl.store(d_ptr + r, d, mask=rmask)


@triton.jit
def _normalize_kernel(d_ptr, out_ptr, L, inner, p, inv_p, eps,
                      KIND: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):  # fmt: skip
    o = tl.program_id(0).to(tl.int64)
    i = tl.program_id(1).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I).to(tl.int64)
    imask = i < inner
    base = o * L * inner
    acc = tl.zeros([BLOCK_L, BLOCK_I], dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        l_ = l0 + tl.arange(0, BLOCK_L).to(tl.int64)
        m = (l_ < L)[:, None] & imask[None, :]
        v = tl.load(d_ptr + base + l_[:, None] * inner + i[None, :], mask=m, other=0.0)
        acc += _pow_abs(v, p, KIND)
    norm = tl.maximum(_root(tl.sum(acc, axis=0), inv_p, KIND), eps)
    for l0 in range(0, L, BLOCK_L):
        l_ = l0 + tl.arange(0, BLOCK_L).to(tl.int64)
        m = (l_ < L)[:, None] & imask[None, :]
        offs = base + l_[:, None] * inner + i[None, :]
        v = tl.load(d_ptr + offs, mask=m, other=0.0)
        tl.store(out_ptr + offs, v / norm[None, :], mask=m)


def _kind(p):
    if p == 1:
        return 1
    if p == 2:
        return 2
    if p > 0 and math.isfinite(p):
        return 3
    raise ValueError("normalize_pairwise_distance expert supports finite p > 0")


def normalize_pairwise_distance(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2, dim_norm=1,
                                eps_norm=1e-12):  # fmt: skip
    a, b = x1.contiguous(), x2.contiguous()
    D = a.shape[-1]
    d_shape = list(a.shape[:-1]) + ([1] if keepdim else [])
    rows = a.numel() // max(D, 1)
    d = torch.empty(d_shape, dtype=torch.float32, device=a.device)
    kd, kn = _kind(float(p_distance)), _kind(float(p_norm))
    if rows:
        _distance_kernel[(triton.cdiv(rows, BLOCK_R),)](a, b, d, rows, D, float(p_distance), 1.0 / float(p_distance),
                                                         float(eps_distance), KIND=kd, BLOCK_R=BLOCK_R,
                                                         BLOCK_D=min(BLOCK_D_MAX, triton.next_power_of_2(D)),
                                                         num_warps=8)  # fmt: skip
    out = torch.empty(d_shape, dtype=x1.dtype, device=a.device)
    if d.numel():
        dim = dim_norm % d.dim()
        L = d.shape[dim]
        inner = 1
        for s in d.shape[dim + 1 :]:
            inner *= s
        outer = d.numel() // (L * inner)
        # contiguous reduction (inner == 1, the usual dim_norm = last of d): long vectors along L
        block_l, block_i = (min(BLOCK_L_MAX, triton.next_power_of_2(L)), 1) if inner == 1 else (64, 16)
        _normalize_kernel[(outer, triton.cdiv(inner, block_i))](d, out, L, inner, float(p_norm), 1.0 / float(p_norm),
                                                                float(eps_norm), KIND=kn, BLOCK_L=block_l,
                                                                BLOCK_I=block_i)  # fmt: skip
    return out
