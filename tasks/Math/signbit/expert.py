"""Expert kernel for Math/signbit: one streaming pass testing the fp32 sign bit (so -0.0 and -inf give True)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _signbit_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bits = tl.load(x_ptr + offs, mask=mask).to(tl.int32, bitcast=True)
    y = bits < 0
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        _signbit_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)


def signbit(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.is_contiguous() and out.shape == x.shape and out.dtype == torch.bool:
        _launch(x, out)
        return out
    y = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    _launch(x, y)
    if out is not None:
        out.resize_(y.shape).copy_(y)
        return out
    return y
