"""Householder QR in Triton: the reflector and update kernels the expert solutions of `LinearAlgebra/qr`,
`determinant_via_qr`, `svd` and `Fusion/fused_qr_solve` share (each expert imports them).
"""

import torch
import triton
import triton.language as tl

GPU_ROWS, GPU_COLS = 128, 32  # apply-kernel tile: rows streamed x columns owned by one program
CPU_ROWS, CPU_COLS = 256, 256  # the CPU interpreter runs fewer, larger tiles faster
REFLECT_BLOCK = 1024


@triton.jit(do_not_specialize=["k"])
def reflector_kernel(a_ptr, v_ptr, beta_ptr, m, ld, a_bstride, v_bstride, k, BLOCK: tl.constexpr):
    """Householder reflector of A[k:, k] for matrix program_id(0): v into V[:, k], beta, alpha into A[k, k]."""
    b = tl.program_id(0).to(tl.int64)
    a = a_ptr + b * a_bstride
    v = v_ptr + b * v_bstride
    x0 = tl.load(a + k * ld + k)
    tail = tl.zeros([BLOCK], dtype=x0.dtype)
    for start in range(k + 1, m, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        x = tl.load(a + rows * ld + k, mask=rows < m, other=0.0)
        tail += x * x
    s = tl.sum(tail, axis=0)
    norm = tl.sqrt(x0 * x0 + s)
    alpha = tl.where(x0 >= 0, -norm, norm)
    alpha = tl.where(s == 0, x0, alpha)  # nothing to eliminate: H = I
    v0 = x0 - alpha
    beta = tl.where(s == 0, 0.0, 2.0 / tl.where(s == 0, 1.0, v0 * v0 + s))
    tl.store(v + k * ld + k, v0)  # V has A's shape
    tl.store(beta_ptr + b * m + k, beta)
    tl.store(a + k * ld + k, alpha)
    for start in range(k + 1, m, BLOCK):
        rows = start + tl.arange(0, BLOCK).to(tl.int64)
        rm = rows < m
        x = tl.load(a + rows * ld + k, mask=rm, other=0.0)
        tl.store(v + rows * ld + k, x, mask=rm)
        tl.store(a + rows * ld + k, tl.zeros_like(x), mask=rm)


@triton.jit(do_not_specialize=["k", "col0"])
def apply_kernel(c_ptr, v_ptr, beta_ptr, m, ldc, c_bstride, ldv, v_bstride, k, col0, ncols,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):  # fmt: skip
    """C[k:, col0:col0+ncols] -= beta_k v_k (v_k^T C[k:, ...]) for matrix program_id(1); v_k = V[k:, k]."""
    b = tl.program_id(1).to(tl.int64)
    c = c_ptr + b * c_bstride
    v = v_ptr + b * v_bstride + k
    beta = tl.load(beta_ptr + b * m + k)
    cols = col0 + tl.program_id(0).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = cols < col0 + ncols
    if beta != 0:
        acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=beta.dtype)
        for start in range(k, m, BLOCK_R):
            rows = start + tl.arange(0, BLOCK_R).to(tl.int64)
            rm = rows < m
            vr = tl.load(v + rows * ldv, mask=rm, other=0.0)
            x = tl.load(c + rows[:, None] * ldc + cols[None, :], mask=rm[:, None] & cm[None, :], other=0.0)
            acc += vr[:, None] * x
        w = beta * tl.sum(acc, axis=0)
        for start in range(k, m, BLOCK_R):
            rows = start + tl.arange(0, BLOCK_R).to(tl.int64)
            rm = rows < m
            vr = tl.load(v + rows * ldv, mask=rm, other=0.0)
            ptrs = c + rows[:, None] * ldc + cols[None, :]
            m2 = rm[:, None] & cm[None, :]
            tl.store(ptrs, tl.load(ptrs, mask=m2, other=0.0) - vr[:, None] * w[None, :], mask=m2)


def apply(c, v, beta, k, col0, ncols):
    """Apply reflector k to columns col0..col0+ncols of every matrix in the batch c (nb, m, ldc)."""
    if ncols <= 0:
        return
    rows, cols = (GPU_ROWS, GPU_COLS) if c.is_cuda else (CPU_ROWS, CPU_COLS)
    nb, m, ldc = c.shape
    grid = (triton.cdiv(ncols, cols), nb)
    apply_kernel[grid](c, v, beta, m, ldc, m * ldc, v.shape[2], v.shape[1] * v.shape[2], k, col0, ncols,
                        BLOCK_R=rows, BLOCK_C=cols)  # fmt: skip


def householder(w):
    """Factor w (nb, m, n) in place into R (upper part) and return (V, beta) with A = H_0 ... H_{p-1} R."""
    nb, m, n = w.shape
    p = min(m, n)
    v = torch.zeros((nb, m, n), dtype=w.dtype, device=w.device)
    beta = torch.zeros((nb, m), dtype=w.dtype, device=w.device)
    for k in range(p):
        reflector_kernel[(nb,)](w, v, beta, m, n, m * n, m * n, k, BLOCK=REFLECT_BLOCK)
        apply(w, v, beta, k, k + 1, n - k - 1)
    return v, beta
