"""Expert kernel for Fusion/fused_tanh_linear: a tiled tl.dot GEMM (fp32 accumulation) with the bias add
and tanh fused into the epilogue; fp16 or fp32 operands, output in the input dtype."""

import torch
import triton
import triton.language as tl

BM, BN, BK = 64, 64, 32


@triton.jit
def _tanh_linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                        sxm, sxk, swn, swk, sym, syn,
                        HAS_BIAS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK).to(tl.int64)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * sxm + kk[None, :] * sxk,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)  # fmt: skip
        b = tl.load(w_ptr + offs_n[None, :] * swn + kk[:, None] * swk,
                    mask=(offs_n[None, :] < N) & (kk[:, None] < K), other=0.0)  # fmt: skip
        acc += tl.dot(a, b)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    y = 2.0 / (1.0 + tl.exp(-2.0 * acc)) - 1.0  # tanh via sigmoid, saturates cleanly
    tl.store(y_ptr + offs_m[:, None] * sym + offs_n[None, :] * syn, y.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))  # fmt: skip


def fused_tanh_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    K = input.shape[-1]
    x = input.reshape(-1, K)
    M, N = x.shape[0], weight.shape[0]
    y = torch.empty((M, N), dtype=input.dtype, device=input.device)
    if M and N:
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        _tanh_linear_kernel[grid](
            x, weight, bias if bias is not None else y, y, M, N, K,
            x.stride(0), x.stride(1), weight.stride(0), weight.stride(1), y.stride(0), y.stride(1),
            HAS_BIAS=bias is not None, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=3,
        )
    return y.reshape(*input.shape[:-1], N)
