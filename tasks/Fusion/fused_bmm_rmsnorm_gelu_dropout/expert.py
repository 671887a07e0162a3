"""Expert kernels for Fusion/fused_bmm_rmsnorm_gelu_dropout.

A tiled batched matmul (tl.dot, fp32 accumulation) writes Z; a row kernel then reads each row of Z once
(several rows per program when rows are short), computes its RMS, and applies the normalization, GELU and
dropout before a single store. Dropout draws one Philox uniform per element from (seed, flat index) with
tl.rand; the seed comes from torch's default generator, so successive calls draw different masks.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
# Globals read inside @triton.jit code must be tl.constexpr: the compiler rejects plain floats.
SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def _bmm_kernel(a_ptr, b_ptr, z_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    batch = tl.program_id(2).to(tl.int64)
    rk = tl.arange(0, BLOCK_K)
    a_base = a_ptr + batch * M * K
    b_base = b_ptr + batch * K * N
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_base + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_base + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(z_ptr + batch * M * N + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _rmsnorm_gelu_dropout_kernel(z_ptr, y_ptr, n_rows, n_cols, eps, p, scale, seed, DROPOUT: tl.constexpr,
                                 TANH: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    flat = rows[:, None] * n_cols + cols[None, :]
    z = tl.load(z_ptr + flat, mask=m, other=0.0)
    r = z / tl.sqrt(tl.sum(z * z, axis=1) / n_cols + eps)[:, None]
    if TANH:
        inner = SQRT_2_OVER_PI * (r + 0.044715 * r * r * r)
        t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0  # tanh as 2 * sigmoid(2x) - 1
        g = 0.5 * r * (1.0 + t)
    else:
        g = 0.5 * r * (1.0 + tl.math.erf(r * SQRT1_2))
    if DROPOUT:
        g = tl.where(tl.rand(seed, flat) >= p, g * scale, 0.0)
    tl.store(y_ptr + flat, g.to(y_ptr.dtype.element_ty), mask=m)


def fused_bmm_rmsnorm_gelu_dropout(input1, input2, normalized_shape, dropout_p=0.1, eps=1e-05, training=True,
                                   approximate="none", *, out=None) -> torch.Tensor:  # fmt: skip
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    a, b = input1.contiguous(), input2.contiguous()
    bsz, m, k = a.shape
    n = b.shape[-1]
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if ns != (n,):
        raise ValueError(f"normalized_shape must be the last dim ({n},), got {ns}")
    z = torch.empty((bsz, m, n), dtype=torch.float32, device=a.device)
    y = torch.empty((bsz, m, n), dtype=a.dtype, device=a.device)
    dropout = bool(training) and dropout_p > 0.0
    scale = 1.0 / (1.0 - dropout_p) if dropout_p < 1.0 else 0.0
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if dropout else 0
    if y.numel():
        _bmm_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), bsz)](a, b, z, m, n, k, BLOCK_M=BLOCK_M,
                                                                             BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                                                             num_warps=4)  # fmt: skip
        block = triton.next_power_of_2(n)
        rows = max(1, min(16, 4096 // block))  # several short rows per program, one long row otherwise
        _rmsnorm_gelu_dropout_kernel[(triton.cdiv(bsz * m, rows),)](z, y, bsz * m, n, float(eps), float(dropout_p),
                                                                    scale, seed, DROPOUT=dropout,
                                                                    TANH=approximate == "tanh", ROWS=rows,
                                                                    BLOCK=block, num_warps=8)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
