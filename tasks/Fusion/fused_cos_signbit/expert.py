"""Expert kernel for Fusion/fused_cos_signbit: one pass writes the cosine and its sign bit."""

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _cos_signbit_kernel(x_ptr, c_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    c = tl.cos(x)
    # the sign bit is the top bit of the IEEE pattern: negative as a signed int32 (catches -0.0 too)
    neg = c.to(tl.int32, bitcast=True) < 0
    tl.store(c_ptr + offs, c.to(c_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + offs, neg, mask=mask)


def fused_cos_signbit(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = input.contiguous()
    c = torch.empty_like(x)
    s = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    n = x.numel()
    if n:
        _cos_signbit_kernel[(triton.cdiv(n, BLOCK),)](x, c, s, n, BLOCK=BLOCK, num_warps=8)
    return c, s
