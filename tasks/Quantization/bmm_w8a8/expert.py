"""Expert kernels for Quantization/bmm_w8a8: per-batch quantize passes, then a batched int8 tl.dot GEMM.

_quantize_kernel finds, for each kept index of each batch (a row of x, a column of w), the absolute
max along K, writes the fp32 scale, then the int8 values (IEEE division, round half away from zero)
laid out K-major. _bmm_kernel multiplies the int8 operands with exact int32 accumulation and applies
both scales in its epilogue.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 128, 64, 8


@triton.jit
def _quantize_kernel(
    src_ptr, q_ptr, scale_ptr, n_keep, n_red, s_batch, s_keep, s_red,
    BLOCK_KEEP: tl.constexpr, BLOCK_RED: tl.constexpr,
):  # fmt: skip
    batch = tl.program_id(1).to(tl.int64)
    ik = tl.program_id(0).to(tl.int64) * BLOCK_KEEP + tl.arange(0, BLOCK_KEEP)
    kmask = ik < n_keep
    jr = tl.arange(0, BLOCK_RED)
    src = src_ptr + batch * s_batch
    amax = tl.zeros((BLOCK_KEEP,), dtype=tl.float32)
    for j0 in range(0, n_red, BLOCK_RED):
        j = (j0 + jr).to(tl.int64)
        m = kmask[:, None] & (j[None, :] < n_red)
        v = tl.load(src + ik[:, None] * s_keep + j[None, :] * s_red, mask=m, other=0.0)
        amax = tl.maximum(amax, tl.max(tl.abs(v), axis=1))
    scale = tl.math.div_rn(amax, tl.full(amax.shape, 127.0, tl.float32))
    scale = tl.where(amax == 0.0, 1.0, scale)
    tl.store(scale_ptr + batch * n_keep + ik, scale, mask=kmask)
    q_base = q_ptr + batch * n_keep * n_red
    for j0 in range(0, n_red, BLOCK_RED):
        j = (j0 + jr).to(tl.int64)
        m = kmask[:, None] & (j[None, :] < n_red)
        v = tl.load(src + ik[:, None] * s_keep + j[None, :] * s_red, mask=m, other=0.0)
        t = tl.math.div_rn(v, tl.broadcast_to(scale[:, None], v.shape))
        a = tl.floor(tl.abs(t) + 0.5)
        q = tl.minimum(tl.maximum(tl.where(t < 0.0, -a, a), -127.0), 127.0)
        tl.store(q_base + ik[:, None] * n_red + j[None, :], q.to(tl.int8), mask=m)


@triton.jit
def _bmm_kernel(
    a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    # a: (B, M, K) int8, b: (B, N, K) int8 (both K-major), c: (B, M, N) fp32, scales (B, M) and (B, N)
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
    a_ptrs = a_ptr + batch * M * K + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + batch * N * K + rn[None, :] * K + rk[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)  # int8 x int8 -> exact int32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    s_a = tl.load(sa_ptr + batch * M + rm, mask=rm < M, other=0.0)
    s_b = tl.load(sb_ptr + batch * N + rn, mask=rn < N, other=0.0)
    out = acc.to(tl.float32) * s_a[:, None] * s_b[None, :]
    c_ptrs = c_ptr + batch * M * N + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, out, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _quantize(t: torch.Tensor, keep_dim: int, red_dim: int):
    """int8 (B, n_keep, n_red) K-major values and (B, n_keep) fp32 scales of 3-D fp32 `t`."""
    B, n_keep, n_red = t.shape[0], t.shape[keep_dim], t.shape[red_dim]
    q = torch.empty((B, n_keep, n_red), dtype=torch.int8, device=t.device)
    scale = torch.empty((B, n_keep), dtype=torch.float32, device=t.device)
    # long side of each tile along the contiguous input dim
    if t.stride(red_dim) == 1:
        block_keep, block_red = 16, min(256, triton.next_power_of_2(max(n_red, 1)))
    else:
        block_keep, block_red = 64, 32
    if B and n_keep:
        grid = (triton.cdiv(n_keep, block_keep), B)
        _quantize_kernel[grid](
            t, q, scale, n_keep, n_red, t.stride(0), t.stride(keep_dim), t.stride(red_dim),
            BLOCK_KEEP=block_keep, BLOCK_RED=block_red,
        )  # fmt: skip
    return q, scale


def bmm_w8a8(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    x = input.contiguous().float()
    w = mat2.contiguous().float()
    B, M, K = x.shape
    B2, K2, N = w.shape
    if B != B2 or K != K2:
        raise RuntimeError(f"bmm_w8a8: shapes {tuple(x.shape)} and {tuple(w.shape)} do not match")
    q_x, s_x = _quantize(x, keep_dim=1, red_dim=2)  # per (b, m) row
    q_wt, s_w = _quantize(w, keep_dim=2, red_dim=1)  # per (b, n) column, stored (B, N, K)
    out = torch.empty((B, M, N), dtype=torch.float32, device=x.device)
    if B and M and N:
        # full tiles for real sizes; small problems (tests) get tiles no larger than the matrix
        bm = min(BLOCK_M, max(16, triton.next_power_of_2(M)))
        bn = min(BLOCK_N, max(16, triton.next_power_of_2(N)))
        bk = min(BLOCK_K, max(32, triton.next_power_of_2(K)))
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), B)
        _bmm_kernel[grid](
            q_x, q_wt, out, s_x, s_w, M, N, K,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=GROUP_M, num_warps=8, num_stages=3,
        )  # fmt: skip
    return out
