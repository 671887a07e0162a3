"""Expert kernels for Fusion/fused_log_softmax_linear.

1. A tiled tl.dot GEMM (fp32 accumulation, fp16 or fp32 operands) with the bias add writes z in fp32
   (never rounded to fp16).
2. Each program takes a tile of rows and computes log_softmax in chunked passes (max, sum of exp, write) in fp32, or
   fp64 when dtype=torch.float64, and stores the requested dtype. dim=0 is handled on the transpose.
"""

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
def _row_log_softmax_kernel(z_ptr, y_ptr, nrows, L, F64: tl.constexpr, R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)
    rm = rows < nrows
    base = rows * L
    cols = tl.arange(0, BLOCK)
    if F64:
        mx = tl.full([R, BLOCK], float("-inf"), tl.float64)
    else:
        mx = tl.full([R, BLOCK], float("-inf"), tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        z = tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=float("-inf")).to(mx.dtype)
        mx = tl.maximum(mx, z)
    mrow = tl.max(mx, axis=1)
    mrow = tl.where(rm, mrow, 0.0)
    acc = tl.zeros([R, BLOCK], dtype=mx.dtype)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        z = tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=float("-inf")).to(mx.dtype)
        acc += tl.exp(z - mrow[:, None])
    lse = mrow + tl.log(tl.sum(acc, axis=1))
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        z = tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0).to(mx.dtype)
        tl.store(y_ptr + base[:, None] + s + cols[None, :], (z - lse[:, None]).to(y_ptr.dtype.element_ty), mask=m)


def fused_log_softmax_linear(input, weight, bias=None, dim=-1, dtype=None):
    out_dtype = dtype if dtype is not None else input.dtype
    K = input.shape[-1]
    x = input.reshape(-1, K)
    M, N = x.shape[0], weight.shape[0]
    z = torch.empty((M, N), dtype=torch.float32, device=input.device)
    if M and N:
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        _linear_kernel[grid](x, weight, bias if bias is not None else z, z, M, N, K, x.stride(0), x.stride(1),
                             weight.stride(0), weight.stride(1), HAS_BIAS=bias is not None, RELU=False,
                             BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=3)  # fmt: skip
    z = z.reshape(*input.shape[:-1], N)
    d = dim % z.dim()
    zt = z.movedim(d, -1).contiguous()  # layout glue: a no-op for dim=-1
    y = torch.empty(zt.shape, dtype=out_dtype, device=input.device)
    L = zt.shape[-1]
    if zt.numel():
        nrows = zt.numel() // L
        blk = min(ROW_BLOCK, triton.next_power_of_2(L))
        r = max(1, TILE // blk)  # several short rows per program
        _row_log_softmax_kernel[(triton.cdiv(nrows, r),)](zt, y, nrows, L, F64=out_dtype == torch.float64, R=r,
                                                           BLOCK=blk, num_warps=8)  # fmt: skip
    return y.movedim(-1, d)
