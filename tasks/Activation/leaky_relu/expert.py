"""Expert kernel for Activation/leaky_relu: one elementwise pass, in place when asked."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.where(x >= 0, x, x * slope)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y, slope):
    n = x.numel()
    if n:
        _kernel[(triton.cdiv(n, BLOCK),)](x, y, n, slope, BLOCK=BLOCK, num_warps=8)


def leaky_relu(input: torch.Tensor, negative_slope: float = 0.01, inplace: bool = False) -> torch.Tensor:
    if inplace and input.is_contiguous():
        _launch(input, input, float(negative_slope))
        return input
    x = input.contiguous()
    y = torch.empty_like(x)
    _launch(x, y, float(negative_slope))
    if inplace:
        input.copy_(y)
        return input
    return y
