"""Expert kernel for MatrixMultiply/addmm: a tiled tl.dot GEMM with the beta * input term fused in its epilogue.

`input` is broadcast to (M, N) on the host as a stride-0 view (no copy); with beta == 0 it is never
loaded, so NaN or inf in it cannot reach the result. Products accumulate in fp32 and the result is
rounded once to the operands' dtype.
"""

import torch
import triton
import triton.language as tl

GROUP_M = 8
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): 16-bit operands take a larger tile
CONFIG_16BIT = (128, 256, 64, 8, 3)
CONFIG_FP32 = (128, 128, 32, 8, 3)


@triton.jit
def _addmm_kernel(
    c_in_ptr, a_ptr, b_ptr, out_ptr, M, N, K, alpha, beta,
    sim, sin, sam, sak, sbk, sbn, som, son,
    HAS_INPUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n
    first_m = (pid // per_group) * GROUP_M
    size_m = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % size_m
    pid_n = (pid % per_group) // size_m

    rm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    out = alpha * acc
    if HAS_INPUT:
        c = tl.load(c_in_ptr + rm[:, None] * sim + rn[None, :] * sin, mask=mask, other=0.0).to(tl.float32)
        out = out + beta * c
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, out.to(out_ptr.dtype.element_ty), mask=mask)


def addmm(input, mat1, mat2, beta=1, alpha=1):
    M, K = mat1.shape
    K2, N = mat2.shape
    if K != K2:
        raise RuntimeError(f"addmm: shapes {tuple(mat1.shape)} and {tuple(mat2.shape)} cannot be multiplied")
    out = torch.empty((M, N), dtype=mat1.dtype, device=mat1.device)
    if M == 0 or N == 0:
        return out
    c = input.to(mat1.dtype).expand(M, N)  # broadcast view: stride 0 along repeated dims
    bm, bn, bk, warps, stages = CONFIG_16BIT if mat1.element_size() == 2 else CONFIG_FP32
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _addmm_kernel[grid](
        c, mat1, mat2, out, M, N, K, float(alpha), float(beta),
        c.stride(0), c.stride(1), mat1.stride(0), mat1.stride(1), mat2.stride(0), mat2.stride(1),
        out.stride(0), out.stride(1),
        HAS_INPUT=beta != 0, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=GROUP_M, num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return out
