"""Batched IEEE-precision matrix products in Triton, with a fused `alpha * C + beta * A @ B` epilogue: the
kernel the expert solutions of `LinearAlgebra/matrix_power_eig` (integer powers by repeated squaring) and
`LinearAlgebra/pseudoinverse_svd` (Newton-Schulz iterations) share.

IEEE precision, not TF32: both feed a product back into the next one (a power, an iteration), and TF32's
10-bit mantissa would put its 5e-4 relative error into every step. The accumulator is the inputs' dtype
(fp32 or fp64).
"""

import torch
import triton
import triton.language as tl

# tiles per dtype on the GPU: (rows, columns, reduction step, warps). fp32: on an H200 (2026-11-29,
# docs/BENCHMARKS.md) 64x64x32 with 4 warps reached 22.5 / 34.8 TFLOP/s at n = 1024 / 2048 (0.90x / 0.78x of
# cuBLAS's fp32 SGEMM), of five tilings the best overall; 128x128x16 with 8 warps 13.1 / 33.3.
TILES = {torch.float32: (64, 64, 32, 4), torch.float64: (64, 64, 16, 4)}


@triton.jit
def _product_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M, N, K, alpha, beta, HAS_C: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    """out[b] = alpha * C[b] + beta * A[b] @ B[b] (or beta * A[b] @ B[b] without C), row-major (M, K) @ (K, N)."""
    b = tl.program_id(2).to(tl.int64)
    rows = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)
    cols = tl.program_id(1).to(tl.int64) * BN + tl.arange(0, BN)
    rm = rows < M
    cm = cols < N
    a_base = a_ptr + b * M * K
    b_base = b_ptr + b * K * N
    acc = tl.zeros([BM, BN], dtype=out_ptr.dtype.element_ty)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        km = k < K
        x = tl.load(a_base + rows[:, None] * K + k[None, :], mask=rm[:, None] & km[None, :], other=0.0)
        y = tl.load(b_base + k[:, None] * N + cols[None, :], mask=km[:, None] & cm[None, :], other=0.0)
        acc += tl.dot(x, y, input_precision="ieee")
    acc = beta * acc
    offs = b * M * N + rows[:, None] * N + cols[None, :]
    mask = rm[:, None] & cm[None, :]
    if HAS_C:
        acc += alpha * tl.load(c_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc, mask=mask)


def product(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, alpha: float = 0.0,
            beta: float = 1.0) -> torch.Tensor:  # fmt: skip
    """alpha * c + beta * a @ b for contiguous (nb, M, K) a, (nb, K, N) b and (nb, M, N) c, into a new tensor."""
    nb, M, K = a.shape
    N = b.shape[2]
    out = torch.empty((nb, M, N), dtype=a.dtype, device=a.device)
    if out.numel() == 0:
        return out
    bm, bn, bk, warps = TILES[a.dtype] if a.is_cuda else (64, 64, 32, 4)
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn), nb)
    _product_kernel[grid](a, b, c if c is not None else out, out, M, N, K, float(alpha), float(beta),
                          HAS_C=c is not None, BM=bm, BN=bn, BK=bk, num_warps=warps)  # fmt: skip
    return out
