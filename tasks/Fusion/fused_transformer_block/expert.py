"""Expert kernels for Fusion/fused_transformer_block.

1. A tiled tl.dot GEMM (fp32 accumulation) gives z1 = input @ weight1.
2. Row kernel: softmax of z1 in chunked passes (max, sum of exp, write) with dropout applied in the
   write pass from Triton's counter-based tl.rand (fresh seed per call from torch's generator).
3. The same GEMM gives v = D @ weight2 with the residual added in its epilogue.
4. Row kernel: layer norm of v without affine parameters (mean, squared deviations, write).
"""

import torch
import triton
import triton.language as tl

BM, BN, BK = 32, 64, 32
ROW_BLOCK = 2048
TILE = 4096  # row-kernel tile: R rows x BLOCK columns


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, r_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
                 ADD_R: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK).to(tl.int64)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * sam + kk[None, :] * sak,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)  # fmt: skip
        b = tl.load(b_ptr + kk[:, None] * sbk + offs_n[None, :] * sbn,
                    mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)  # fmt: skip
        acc += tl.dot(a, b)
    cmask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    dst = offs_m[:, None] * N + offs_n[None, :]
    if ADD_R:
        acc += tl.load(r_ptr + dst, mask=cmask, other=0.0).to(tl.float32)
    tl.store(c_ptr + dst, acc, mask=cmask)


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _softmax_dropout_kernel(z_ptr, nrows, L, p, scale, seed, DROP: tl.constexpr, R: tl.constexpr,
                            BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)
    rm = rows < nrows
    base = rows * L
    cols = tl.arange(0, BLOCK)
    mx = tl.full([R, BLOCK], float("-inf"), tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        mx = tl.maximum(mx, tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=float("-inf")))
    mrow = tl.where(rm, tl.max(mx, axis=1), 0.0)
    acc = tl.zeros([R, BLOCK], dtype=tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        z = tl.load(z_ptr + base[:, None] + s + cols[None, :], mask=m, other=float("-inf"))
        acc += tl.exp(z - mrow[:, None])
    inv = 1.0 / tl.sum(acc, axis=1)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        idx = base[:, None] + s + cols[None, :]
        z = tl.load(z_ptr + idx, mask=m, other=float("-inf"))
        v = tl.exp(z - mrow[:, None]) * inv[:, None]
        if DROP:
            keep = tl.rand(seed, idx) >= p
            v = tl.where(keep, v * scale, 0.0)
        tl.store(z_ptr + idx, v, mask=m)


@triton.jit
def _layer_norm_kernel(v_ptr, y_ptr, nrows, L, eps, R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)
    rm = rows < nrows
    base = rows * L
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([R, BLOCK], dtype=tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        acc += tl.load(v_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0)
    mean = tl.sum(acc, axis=1) / L
    acc2 = tl.zeros([R, BLOCK], dtype=tl.float32)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        d = tl.where(m, tl.load(v_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0) - mean[:, None], 0.0)
        acc2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=1) / L + eps)
    for s in range(0, L, BLOCK):
        m = rm[:, None] & ((s + cols) < L)[None, :]
        v = (tl.load(v_ptr + base[:, None] + s + cols[None, :], mask=m, other=0.0) - mean[:, None]) * rstd[:, None]
        tl.store(y_ptr + base[:, None] + s + cols[None, :], v.to(y_ptr.dtype.element_ty), mask=m)


def _row_launch(L):
    blk = min(ROW_BLOCK, triton.next_power_of_2(max(L, 1)))
    return blk, max(1, TILE // blk)


def fused_transformer_block(input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None):
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    d_in = input.shape[-1]
    x = input.reshape(-1, d_in)
    rows = x.shape[0]
    d_k, d_out = weight1.shape[1], weight2.shape[1]
    dev = input.device
    z = torch.empty((rows, d_k), dtype=torch.float32, device=dev)
    v = torch.empty((rows, d_out), dtype=torch.float32, device=dev)
    res = residual.expand(*input.shape[:-1], d_out).reshape(rows, d_out).contiguous()
    y = torch.empty((*input.shape[:-1], d_out), dtype=input.dtype, device=dev)
    if rows and d_out:
        _gemm_kernel[(triton.cdiv(rows, BM), triton.cdiv(d_k, BN))](
            x, weight1, z, z, rows, d_k, d_in, x.stride(0), x.stride(1), weight1.stride(0), weight1.stride(1),
            ADD_R=False, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=3,
        )
        drop = dropout_p > 0.0
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if drop else 0
        blk, r = _row_launch(d_k)
        if dropout_p >= 1.0:
            z.zero_()
        else:
            _softmax_dropout_kernel[(triton.cdiv(rows, r),)](z, rows, d_k, float(dropout_p), 1.0 / (1.0 - dropout_p),
                                                             seed, DROP=drop, R=r, BLOCK=blk, num_warps=8)  # fmt: skip
        _gemm_kernel[(triton.cdiv(rows, BM), triton.cdiv(d_out, BN))](
            z, weight2, res, v, rows, d_out, d_k, z.stride(0), z.stride(1), weight2.stride(0), weight2.stride(1),
            ADD_R=True, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=3,
        )
        blk, r = _row_launch(d_out)
        _layer_norm_kernel[(triton.cdiv(rows, r),)](v, y, rows, d_out, float(eps), R=r, BLOCK=blk, num_warps=8)
    if out is not None:
        out.copy_(y)
        return out
    return y
