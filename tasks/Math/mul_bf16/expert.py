"""Expert kernel for Math/mul_bf16: bf16 operands, exact fp32 product rounded once to bf16 on store.

Broadcast operands are expanded on the host (a no-op for the equal-shape perf inputs).
"""

import torch
import triton
import triton.language as tl

BLOCK = 8192


@triton.jit
def _mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * y).to(out_ptr.dtype.element_ty), mask=mask)


def mul_bf16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(input.shape, other.shape)
    x = input.expand(shape).contiguous()  # no copy when the shapes already match
    y = other.expand(shape).contiguous()
    out = torch.empty(shape, dtype=torch.result_type(input, other), device=input.device)
    n = out.numel()
    if n:
        _mul_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=8)
    return out
