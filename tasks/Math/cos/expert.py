"""Expert kernel for Math/cos: one streaming pass, fp32 math."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _cos_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.cos(x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, y):
    n = x.numel()
    if n:
        _cos_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)


def cos(input_tensor: torch.Tensor) -> torch.Tensor:
    x = input_tensor.contiguous()
    y = torch.empty_like(x)
    _launch(x, y)
    return y
