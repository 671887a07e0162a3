"""Expert kernel for Fusion/fused_relu_sqrt: one pass that converts, rectifies and takes the square root."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _relu_sqrt_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if x.dtype == tl.float64:
        xf = x
    else:
        xf = x.to(tl.float32)
    y = tl.sqrt(tl.maximum(xf, 0.0))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def fused_relu_sqrt(input: torch.Tensor, inplace: bool = False, out: torch.Tensor | None = None) -> torch.Tensor:
    is_float = input.dtype in (torch.float32, torch.float64)
    out_dtype = input.dtype if is_float else torch.float32
    x = input if input.is_contiguous() else input.contiguous()
    if inplace and is_float and input.is_contiguous():
        y = input  # overwrite the caller's tensor
    elif inplace:
        y = torch.empty(input.shape, dtype=out_dtype, device=input.device)
    elif out is not None and out.is_contiguous() and out.shape == input.shape and out.dtype == out_dtype:
        y = out
    else:
        y = torch.empty(input.shape, dtype=out_dtype, device=input.device)
    n = x.numel()
    if n:
        _relu_sqrt_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
    if inplace:
        if is_float and y is not input:
            input.copy_(y)
            return input
        return y
    if out is not None and y is not out:
        out.copy_(y)
        return out
    return y
