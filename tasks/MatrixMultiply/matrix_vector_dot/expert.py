"""Expert kernels for MatrixMultiply/matrix_vector_dot: a fused GEMV + axpby + partial dot, then a final sum.

_gemv_dot_kernel gives each program BLOCK_R rows of A: it streams them in coalesced BLOCK_C-wide tiles,
forms (A @ x) for its rows in fp32, writes y <- alpha * (A @ x) + beta * y in place, and stores its rows'
share of dot(y, x). _sum_kernel adds the per-program partials into the 0-d result.
"""

import torch
import triton
import triton.language as tl

BLOCK_R, BLOCK_C = 16, 256
SUM_BLOCK = 1024


@triton.jit
def _gemv_dot_kernel(a_ptr, x_ptr, y_ptr, part_ptr, n, m, sar, sac, alpha, beta,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n
    cols = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for c0 in range(0, m, BLOCK_C):
        c = (c0 + cols).to(tl.int64)
        cmask = c < m
        a = tl.load(a_ptr + rows[:, None] * sar + c[None, :] * sac, mask=rmask[:, None] & cmask[None, :], other=0.0)
        xv = tl.load(x_ptr + c, mask=cmask, other=0.0)
        acc += a.to(tl.float32) * xv.to(tl.float32)[None, :]
    ax = tl.sum(acc, axis=1)
    y = tl.load(y_ptr + rows, mask=rmask, other=0.0).to(tl.float32)
    y_new = alpha * ax + beta * y
    tl.store(y_ptr + rows, y_new.to(y_ptr.dtype.element_ty), mask=rmask)
    x_rows = tl.load(x_ptr + rows, mask=rmask, other=0.0).to(tl.float32)
    tl.store(part_ptr + pid, tl.sum(tl.where(rmask, y_new * x_rows, 0.0), axis=0))


@triton.jit
def _sum_kernel(part_ptr, out_ptr, n_parts, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK):
        acc += tl.load(part_ptr + p0 + offs, mask=p0 + offs < n_parts, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def matrix_vector_dot(A: torch.Tensor, x: torch.Tensor, y: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    n, m = A.shape
    if x.shape != (m,) or y.shape != (n,) or n != m:
        raise RuntimeError(f"matrix_vector_dot: bad shapes A {tuple(A.shape)}, x {tuple(x.shape)}, y {tuple(y.shape)}")
    xc = x.contiguous()
    yc = y if y.is_contiguous() else y.contiguous()
    n_parts = triton.cdiv(n, BLOCK_R)
    parts = torch.empty((max(n_parts, 1),), dtype=torch.float32, device=A.device)
    out = torch.empty((), dtype=y.dtype, device=A.device)
    if n_parts:
        _gemv_dot_kernel[(n_parts,)](
            A, xc, yc, parts, n, m, A.stride(0), A.stride(1), float(alpha), float(beta),
            BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=4,
        )  # fmt: skip
    else:
        parts.zero_()
    _sum_kernel[(1,)](parts, out, max(n_parts, 1), BLOCK=SUM_BLOCK)
    if yc is not y:
        y.copy_(yc)
    return out
