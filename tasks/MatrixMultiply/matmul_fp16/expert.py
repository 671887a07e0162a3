"""Expert kernel for MatrixMultiply/matmul_fp16: a batched, tiled tl.dot GEMM on fp16 operands with fp32 accumulation.

1-D and batched operands are resolved on the host into (B, M, K) @ (B, K, N) views; the kernel takes
arbitrary strides (stride 0 for a broadcast batch), so no operand is copied.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 64, 8
NUM_WARPS, NUM_STAGES = 8, 3


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # grouped tile order so neighbouring programs reuse B tiles from L2
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    rm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * sab + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + batch * sbb + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    c_ptrs = c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    if input.dim() == 0 or other.dim() == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    vec_a, vec_b = input.dim() == 1, other.dim() == 1
    a = input.unsqueeze(0) if vec_a else input
    b = other.unsqueeze(-1) if vec_b else other
    M, K = a.shape[-2:]
    K2, N = b.shape[-2:]
    if K != K2:
        raise RuntimeError(f"matmul_fp16: shapes {tuple(input.shape)} and {tuple(other.shape)} cannot be multiplied")
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3 = a.expand(*batch, M, K).reshape(-1, M, K)
    b3 = b.expand(*batch, K, N).reshape(-1, K, N)
    nb = a3.shape[0]
    c = torch.empty((nb, M, N), dtype=torch.float16, device=input.device)
    if M and N and nb:
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), nb)
        _gemm_kernel[grid](a3, b3, c, M, N, K, a3.stride(0), a3.stride(1), a3.stride(2),
                           b3.stride(0), b3.stride(1), b3.stride(2), c.stride(0), c.stride(1), c.stride(2),
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                           num_warps=NUM_WARPS, num_stages=NUM_STAGES)  # fmt: skip
    c = c.reshape(*batch, M, N)
    if vec_a:
        c = c.squeeze(-2)
    if vec_b:
        c = c.squeeze(-1)
    return c
