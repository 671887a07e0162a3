"""Expert kernel for Activation/relu and its dtype variants relu_bf16, relu_fp16.

One streaming pass; in place when asked. The select runs on the exact fp32 widening of the input
(the CPU interpreter has no bf16 comparisons), and NaN propagates as in torch.
"""

import torch
import triton
import triton.language as tl

BLOCK_FP32 = 4096
BLOCK_HALF = 8192  # fp16 / bf16: twice the elements for the same bytes per program


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # exact widening
    y = tl.where(x < 0, tl.zeros_like(x), x)  # x < 0 is False for NaN, so NaN passes through
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        block = BLOCK_FP32 if x.dtype == torch.float32 else BLOCK_HALF
        _relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block, num_warps=8)


def relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    if inplace and input.is_contiguous():
        _launch(input, input)
        return input
    x = input.contiguous()
    y = torch.empty_like(x)
    _launch(x, y)
    if inplace:
        input.copy_(y)
        return input
    return y


def relu_bf16(input: torch.Tensor) -> torch.Tensor:
    return relu(input)


def relu_fp16(input: torch.Tensor) -> torch.Tensor:
    return relu(input)
