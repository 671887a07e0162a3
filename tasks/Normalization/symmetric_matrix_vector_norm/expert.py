"""Expert kernel for Normalization/symmetric_matrix_vector_norm: each program computes BLOCK_M entries of
y = (1 + beta) * alpha * A x by streaming row tiles of A (coalesced), then writes its partial sum of |y|^p
(or max |y| for p = inf); a single-program pass combines the partials in a fixed order."""

import math

import torch
import triton
import triton.language as tl

BLOCK_M = 16
BLOCK_N = 256
RBLOCK = 1024


@triton.jit
def _matvec_norm_kernel(a_ptr, x_ptr, part_ptr, n, sa0, alpha, beta, p,
                        P_KIND: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    rmask = rows < n
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for c0 in range(0, n, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N).to(tl.int64)
        cmask = cols < n
        a = tl.load(a_ptr + rows[:, None] * sa0 + cols[None, :], mask=rmask[:, None] & cmask[None, :], other=0.0)
        xv = tl.load(x_ptr + cols, mask=cmask, other=0.0)
        acc += a.to(tl.float32) * xv.to(tl.float32)[None, :]
    y = alpha * tl.sum(acc, axis=1)
    y = y + beta * y
    ay = tl.where(rmask, tl.abs(y), 0.0)
    if P_KIND == 1:
        part = tl.sum(ay, axis=0)
    elif P_KIND == 2:
        part = tl.sum(ay * ay, axis=0)
    elif P_KIND == 3:  # infinity norm
        part = tl.max(ay, axis=0)
    else:
        part = tl.sum(tl.where(ay > 0, tl.exp(p * tl.log(tl.where(ay > 0, ay, 1.0))), 0.0), axis=0)
    tl.store(part_ptr + pid, part)


@triton.jit
def _finish_kernel(part_ptr, out_ptr, m, inv_p, P_KIND: tl.constexpr, RBLOCK: tl.constexpr):
    acc = tl.zeros([RBLOCK], dtype=tl.float32)
    for start in range(0, m, RBLOCK):
        offs = start + tl.arange(0, RBLOCK)
        v = tl.load(part_ptr + offs, mask=offs < m, other=0.0)
        if P_KIND == 3:
            acc = tl.maximum(acc, v)
        else:
            acc += v
    if P_KIND == 3:
        total = tl.max(acc, axis=0)
    else:
        total = tl.sum(acc, axis=0)
    if P_KIND == 2:
        total = tl.sqrt(total)
    elif P_KIND == 4:
        total = tl.where(total > 0, tl.exp(inv_p * tl.log(tl.where(total > 0, total, 1.0))), 0.0)
    tl.store(out_ptr, total)


def symmetric_matrix_vector_norm(A, x, alpha, beta, p=2.0):
    n = A.shape[0]
    a = A if A.stride(-1) == 1 else A.contiguous()
    xv = x.contiguous()
    if p == 1:
        kind = 1
    elif p == 2:
        kind = 2
    elif p == math.inf:
        kind = 3
    elif p > 0:
        kind = 4
    else:
        raise ValueError("symmetric_matrix_vector_norm expert supports p > 0")
    grid = max(triton.cdiv(n, BLOCK_M), 1)
    parts = torch.zeros(grid, dtype=torch.float32, device=A.device)
    out = torch.empty((), dtype=A.dtype, device=A.device)
    if n:
        _matvec_norm_kernel[(grid,)](a, xv, parts, n, a.stride(0), float(alpha), float(beta), float(p), P_KIND=kind,
                                     BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)  # fmt: skip
    _finish_kernel[(1,)](parts, out, grid, 1.0 / float(p) if kind == 4 else 0.0, P_KIND=kind, RBLOCK=RBLOCK)
    return out
