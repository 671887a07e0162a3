"""Expert kernels for Fusion/fused_layer_norm_relu_linear.

1. A tiled tl.dot GEMM (fp32 accumulation) with the bias add and ReLU fused writes z in fp32.
2. Each program layer-normalizes a tile of rows (of the normalized trailing size) in chunked passes:
   mean, then squared deviations, then the normalized write.
"""

import math

import torch
import triton
import triton.language as tl

BM, BN, BK = 32, 64, 64
ROW_BLOCK = 2048
TILE = 4096  # row-kernel tile: R rows x BLOCK columns


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, sxm, sxk, swn, swk,
                   HAS_BIAS: tl.constexpr, RELU: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    # z = x @ w^T (+ b) in fp32 (tl.dot tiles, fp32 accumulation), optionally rectified
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK).to(tl.int64)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * sxm + kk[None, :] * sxk,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)  # fmt: skip
        b = tl.load(w_ptr + offs_n[None, :] * swn + kk[:, None] * swk,
                    mask=(offs_n[None, :] < N) & (kk[:, None] < K), other=0.0)  # fmt: skip
        acc += tl.dot(a, b)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(z_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _row_layer_norm_kernel(z_ptr, y_ptr, nrows, L, eps, R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)
    rm = rows < nrows
    base = rows * L
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([R, BLOCK], dtype=tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        acc += tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0)
    mean = tl.sum(acc, axis=1) / L
    acc2 = tl.zeros([R, BLOCK], dtype=tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        d = tl.where(m, tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0) - mean[:, None], 0.0)
        acc2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=1) / L + eps)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        v = (tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0) - mean[:, None]) * rstd[:, None]
        tl.store(y_ptr + base[:, None] + s + cols[None, :], v.to(y_ptr.dtype.element_ty), mask=m)


def fused_layer_norm_relu_linear(input, weight, bias=None, normalized_shape=None, eps=1e-05, elementwise_affine=True):
    K = input.shape[-1]
    x = input.reshape(-1, K)
    M, N = x.shape[0], weight.shape[0]
    z = torch.empty((M, N), dtype=torch.float32, device=input.device)
    out_shape = (*input.shape[:-1], N)
    if normalized_shape is None:
        normalized_shape = (N,)
    elif isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if tuple(out_shape[len(out_shape) - len(normalized_shape):]) != tuple(normalized_shape):
        raise RuntimeError(f"normalized_shape {tuple(normalized_shape)} does not match the trailing dims of "
                           f"{out_shape}")
    y = torch.empty(out_shape, dtype=input.dtype, device=input.device)
    if M == 0 or N == 0:
        return y
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    _linear_kernel[grid](x, weight, bias if bias is not None else z, z, M, N, K, x.stride(0), x.stride(1),
                         weight.stride(0), weight.stride(1), HAS_BIAS=bias is not None, RELU=True,
                         BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=3)  # fmt: skip
    L = math.prod(normalized_shape)
    nrows = z.numel() // L
    blk = min(ROW_BLOCK, triton.next_power_of_2(L))
    r = max(1, TILE // blk)  # several short rows per program
    _row_layer_norm_kernel[(triton.cdiv(nrows, r),)](z, y, nrows, L, float(eps), R=r, BLOCK=blk, num_warps=8)
    return y
