"""Expert kernel for Fusion/fused_dropout_sigmoid_linear: a tiled input @ weight^T (tl.dot, fp32
accumulation) whose epilogue adds the bias, applies sigmoid and dropout, then stores once.

Dropout draws one Philox uniform per output element from (seed, flat output index) with tl.rand; the
seed comes from torch's default generator, so successive calls draw different masks.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _linear_sigmoid_dropout_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, p, scale, seed, HAS_BIAS: tl.constexpr,
                                   DROPOUT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                   BLOCK_K: tl.constexpr):  # fmt: skip
    rm = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        # weight is (N, K): read its tile transposed as (BLOCK_K, BLOCK_N)
        b = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    s = 1.0 / (1.0 + tl.exp(-acc))
    flat = rm[:, None] * N + rn[None, :]
    if DROPOUT:
        s = tl.where(tl.rand(seed, flat) >= p, s * scale, 0.0)
    tl.store(y_ptr + flat, s.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def fused_dropout_sigmoid_linear(input, weight, bias=None, p=0.5, training=True, inplace=False) -> torch.Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    x = input.reshape(-1, input.shape[-1]).contiguous()
    w = weight.contiguous()
    m, k = x.shape
    n = w.shape[0]
    y = torch.empty((m, n), dtype=input.dtype, device=input.device)
    dropout = bool(training) and p > 0.0
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if dropout else 0
    b = bias.contiguous() if bias is not None else w  # unused when there is no bias
    if y.numel():
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
        _linear_sigmoid_dropout_kernel[grid](x, w, b, y, m, n, k, float(p), scale, seed, HAS_BIAS=bias is not None,
                                             DROPOUT=dropout, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                             num_warps=4)  # fmt: skip
    return y.reshape(*input.shape[:-1], n)
