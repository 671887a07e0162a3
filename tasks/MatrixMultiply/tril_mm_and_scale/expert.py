"""Expert kernel for MatrixMultiply/tril_mm_and_scale: a tiled tl.dot GEMM that reads only A's lower triangle.

Each output row tile stops its K loop at the tile's last row (columns beyond it are zero in tril(A)),
which halves the work on average, and masks the diagonal tile elementwise; the scales are applied
to the fp32 accumulator before the single store.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 128, 32, 8


@triton.jit
def _tril_mm_kernel(a_ptr, b_ptr, c_ptr, M, N, sam, sak, sbk, sbn, scm, scn, alpha, beta,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    rm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_end = tl.minimum(M, (pid_m + 1) * BLOCK_M)  # tril(A)[i, k] == 0 for k > i
    for k in range(0, k_end, BLOCK_K):
        kk = k + rk
        a_mask = (rm[:, None] < M) & (kk[None, :] < M) & (kk[None, :] <= rm[:, None])
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=a_mask, other=0.0)
        b_mask = (kk[:, None] < M) & (rn[None, :] < N)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
    out = (acc * alpha) * beta
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, out.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def tril_mm_and_scale(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    n, n2 = A.shape
    if n != n2 or B.shape[0] != n:
        raise RuntimeError(f"tril_mm_and_scale: bad shapes {tuple(A.shape)} and {tuple(B.shape)}")
    p = B.shape[1]
    c = torch.empty((n, p), dtype=A.dtype, device=A.device)
    if n and p:
        grid = (triton.cdiv(n, BLOCK_M) * triton.cdiv(p, BLOCK_N),)
        _tril_mm_kernel[grid](A, B, c, n, p, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                              c.stride(0), c.stride(1), float(alpha), float(beta),
                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                              num_warps=8, num_stages=3)  # fmt: skip
    return c
