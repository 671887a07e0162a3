"""Expert kernel for Math/signbit_bitwise_and: one pass writing signbit(x) and int8(x) & int8(other)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _kernel(x_ptr, o_ptr, sign_ptr, and_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    o = tl.load(o_ptr + offs, mask=mask, other=0).to(tl.int8)
    sign = x.to(tl.int32, bitcast=True) < 0  # sign bit: True for -0.0 too
    xi = x.to(tl.int8)  # float -> int conversion truncates toward zero
    tl.store(sign_ptr + offs, sign, mask=mask)
    tl.store(and_ptr + offs, xi & o, mask=mask)


def signbit_bitwise_and(input: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    shape = torch.broadcast_shapes(input.shape, other.shape)
    x = input.to(torch.float32).expand(shape).contiguous()
    o = other.expand(shape).contiguous()
    if o.dtype == torch.bool:
        o = o.view(torch.uint8)  # True is the byte 1
    sign = torch.empty(shape, dtype=torch.bool, device=input.device)
    anded = torch.empty(shape, dtype=torch.int8, device=input.device)
    n = sign.numel()
    if n:
        _kernel[(triton.cdiv(n, BLOCK),)](x, o, sign, anded, n, BLOCK=BLOCK, num_warps=8)
    return sign, anded
