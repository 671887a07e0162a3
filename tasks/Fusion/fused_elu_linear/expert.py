"""Expert kernel for Fusion/fused_elu_linear: a tiled input @ weight^T (tl.dot, fp32 accumulation for
fp32 and fp16 operands) whose epilogue adds the bias and applies ELU before a single store in the input
dtype.
"""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32


@triton.jit
def _linear_elu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, alpha, HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
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
    neg = alpha * (tl.exp(tl.minimum(acc, 0.0)) - 1.0)
    y = tl.where(acc > 0, acc, neg)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def fused_elu_linear(input, weight, bias=None, alpha=1.0, inplace=False) -> torch.Tensor:
    x = input.reshape(-1, input.shape[-1]).contiguous()
    w = weight.contiguous()
    m, k = x.shape
    n = w.shape[0]
    y = torch.empty((m, n), dtype=input.dtype, device=input.device)
    b = bias.contiguous() if bias is not None else w  # unused when there is no bias
    if y.numel():
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
        _linear_elu_kernel[grid](x, w, b, y, m, n, k, float(alpha), HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M,
                                 BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=4)  # fmt: skip
    return y.reshape(*input.shape[:-1], n)
