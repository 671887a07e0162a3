"""Expert kernel for Fusion/fused_bmm_dropout_gelu: a tiled batched matmul (tl.dot, fp32 accumulation)
whose epilogue applies dropout and GELU before the single store, so Z never reaches memory.

Dropout draws one Philox uniform per output element from (seed, flat output index) with tl.rand; the
seed comes from torch's default generator, so successive calls draw different masks.

Speed: not slow. On an H100 (2026-11-27, docs/BENCHMARKS.md) 0.195 / 1.51 / 10.8 ms at B32 N = 512 / 1024
/ 2048 against eager's 0.232 / 1.56 / 11.1 ms (cuBLAS bmm, then dropout and GELU), 1.08x. Its 0.05x on the
H200 (2026-11-27) is one shape recorded at 2,024 ms: its estimate, made while the GPU was shared, spanned a
freeze for another attempt's window and sent it to the shared fallback; the other two shapes ran at 1.00x
and 1.02x there. Since cdfebc2 an estimate that spans a freeze is made again.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
# Globals read inside @triton.jit code must be tl.constexpr: the compiler rejects plain floats.
SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _bmm_dropout_gelu_kernel(a_ptr, b_ptr, y_ptr, M, N, K, p, scale, seed, DROPOUT: tl.constexpr,
                             TANH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_base = a_ptr + batch * M * K
    b_base = b_ptr + batch * K * N
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a = tl.load(a_base + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_base + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    flat = batch * M * N + rm[:, None].to(tl.int64) * N + rn[None, :]
    z = acc
    if DROPOUT:
        r = tl.rand(seed, flat)
        z = tl.where(r >= p, acc * scale, 0.0)
    if TANH:
        inner = SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)
        t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0  # tanh as 2 * sigmoid(2x) - 1
        g = 0.5 * z * (1.0 + t)
    else:
        g = 0.5 * z * (1.0 + tl.math.erf(z * SQRT1_2))
    tl.store(y_ptr + flat, g.to(y_ptr.dtype.element_ty), mask=out_mask)


def fused_bmm_dropout_gelu(input1, input2, p=0.5, training=True, inplace=False, approximate="none", *, out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    a = input1.contiguous()
    b = input2.contiguous()
    bsz, m, k = a.shape
    n = b.shape[-1]
    y = torch.empty((bsz, m, n), dtype=a.dtype, device=a.device)
    dropout = bool(training) and p > 0.0
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if dropout else 0
    if y.numel():
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), bsz)
        _bmm_dropout_gelu_kernel[grid](a, b, y, m, n, k, float(p), scale, seed, DROPOUT=dropout,
                                       TANH=approximate == "tanh", BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                       BLOCK_K=BLOCK_K, num_warps=4)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
