"""Expert kernel for MatrixMultiply/tensordot_rsqrt: a tiled tl.dot GEMM with an rsqrt epilogue.

tensordot is reduced on the host to one (M, K) @ (K, N) product by permuting a's contracted dims last and
b's first (views; a copy only when the permuted operand is not already laid out that way). The kernel
accumulates in fp32 and applies 1/sqrt to each output tile before its single store.
"""

import math

import torch
import triton
import triton.language as tl

GROUP_M = 8
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32


@triton.jit
def _mm_rsqrt_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
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
    out = 1.0 / tl.sqrt_rn(acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out, mask=(rm[:, None] < M) & (rn[None, :] < N))


def tensordot_rsqrt(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor:
    if isinstance(dims, int):
        dims_a = list(range(a.dim() - dims, a.dim()))
        dims_b = list(range(dims))
    else:
        dims_a = [d % a.dim() for d in dims[0]]
        dims_b = [d % b.dim() for d in dims[1]]
    if len(dims_a) != len(dims_b) or any(a.shape[i] != b.shape[j] for i, j in zip(dims_a, dims_b)):
        raise RuntimeError("tensordot_rsqrt: contracted dimensions do not match")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    K = math.prod(a.shape[d] for d in dims_a)
    M = math.prod(a.shape[d] for d in free_a)
    N = math.prod(b.shape[d] for d in free_b)
    a2 = a.float().permute(*free_a, *dims_a).reshape(M, K)
    b2 = b.float().permute(*dims_b, *free_b).reshape(K, N)
    out = torch.empty((M, N), dtype=torch.float32, device=a.device)
    if M and N:
        # full tiles for real sizes; tiny problems (tests) get tiles no larger than needed
        bm = min(BLOCK_M, max(16, triton.next_power_of_2(M)))
        bn = min(BLOCK_N, max(16, triton.next_power_of_2(N)))
        bk = min(BLOCK_K, max(16, triton.next_power_of_2(K)))
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        _mm_rsqrt_kernel[grid](
            a2, b2, out, M, N, K, a2.stride(0), a2.stride(1), b2.stride(0), b2.stride(1),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=GROUP_M, num_warps=8, num_stages=3,
        )  # fmt: skip
    return out.reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])
