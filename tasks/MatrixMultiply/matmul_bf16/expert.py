"""Expert kernel for MatrixMultiply/matmul_bf16: a batched, tiled bf16 tl.dot GEMM with fp32 accumulation.

1-D operands and 3-D batches are mapped on the host onto (B, M, K) @ (B, K, N) views (stride 0 for a
broadcast batch); the kernel accumulates in fp32 and rounds each output once to bf16.
Note: the Triton CPU interpreter computes bf16 wrongly, so this expert can only be judged on a GPU.
"""

import torch
import triton
import triton.language as tl

GROUP_M = 8
BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64


@triton.jit
def _bmm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
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
    a_ptrs = a_ptr + batch * sab + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + batch * sbb + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)  # bf16 x bf16 products, fp32 accumulation
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    c_ptrs = c_ptr + batch * M * N + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_bf16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    a, b = input.bfloat16(), other.bfloat16()
    if a.dim() == 0 or b.dim() == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    vec_a, vec_b = a.dim() == 1, b.dim() == 1
    if vec_a:
        a = a.unsqueeze(0)
    if vec_b:
        b = b.unsqueeze(-1)
    M, K = a.shape[-2:]
    K2, N = b.shape[-2:]
    if K != K2:
        raise RuntimeError(f"matmul_bf16: shapes {tuple(input.shape)} and {tuple(other.shape)} cannot be multiplied")
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3 = a.expand(*batch, M, K).reshape(-1, M, K)
    b3 = b.expand(*batch, K, N).reshape(-1, K, N)
    B = a3.shape[0]
    c3 = torch.empty((B, M, N), dtype=torch.bfloat16, device=a.device)
    if B and M and N:
        bm = min(BLOCK_M, max(16, triton.next_power_of_2(M)))  # small problems get small tiles
        bn = min(BLOCK_N, max(16, triton.next_power_of_2(N)))
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), B)
        _bmm_kernel[grid](
            a3, b3, c3, M, N, K, a3.stride(0), a3.stride(1), a3.stride(2), b3.stride(0), b3.stride(1), b3.stride(2),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=8, num_stages=3,
        )  # fmt: skip
    c = c3.reshape(*batch, M, N)
    if vec_a:
        c = c.squeeze(-2)
    if vec_b:
        c = c.squeeze(-1)
    return c
