"""Expert kernel for Activation/relu_bf16: one streaming pass; the select runs on the exact fp32 widening of bf16."""

import torch
import triton
import triton.language as tl

BLOCK = 8192


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # exact widening
    y = tl.where(x < 0, tl.zeros_like(x), x)  # NaN passes through, as in torch
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def relu_bf16(input: torch.Tensor) -> torch.Tensor:
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
    return y
