"""Expert kernel for Math/mul and its dtype variants mul_bf16, mul_fp16: one streaming pass with torch's type
promotion.

Real results are computed in the result dtype (fp32 math, one rounding, for fp16/bf16); complex64 results
read interleaved (re, im) pairs. A Python-number operand is passed as a one-element tensor of the result
dtype and read once per program.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096
BLOCK_HALF = 8192  # the variants (fp16 / bf16 operands): twice the elements for the same bytes per program


@triton.jit
def _mul_kernel(x_ptr, y_ptr, out_ptr, n, Y_IS_SCALAR: tl.constexpr, UPCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ty = out_ptr.dtype.element_ty
    x = tl.load(x_ptr + offs, mask=mask)
    if Y_IS_SCALAR:
        y = tl.load(y_ptr)
    else:
        y = tl.load(y_ptr + offs, mask=mask)
    if UPCAST:  # half-precision result: exact fp32 product, rounded once on store
        r = x.to(tl.float32) * y.to(tl.float32)
    else:
        r = x.to(ty) * y.to(ty)
    tl.store(out_ptr + offs, r.to(ty), mask=mask)


@triton.jit
def _cmul_kernel(x_ptr, y_ptr, out_ptr, n, Y_IS_SCALAR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + 2 * offs, mask=mask)
    b = tl.load(x_ptr + 2 * offs + 1, mask=mask)
    if Y_IS_SCALAR:
        c = tl.load(y_ptr)
        d = tl.load(y_ptr + 1)
    else:
        c = tl.load(y_ptr + 2 * offs, mask=mask)
        d = tl.load(y_ptr + 2 * offs + 1, mask=mask)
    tl.store(out_ptr + 2 * offs, a * c - b * d, mask=mask)
    tl.store(out_ptr + 2 * offs + 1, a * d + b * c, mask=mask)


def mul(input, other, out=None):
    return _mul(input, other, out, BLOCK)


def mul_bf16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return _mul(input, other, None, BLOCK_HALF)


def mul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return _mul(input, other, None, BLOCK_HALF)


def _mul(input, other, out, block):
    res_dtype = torch.result_type(input, other)
    scalar = not isinstance(other, torch.Tensor)
    if scalar:
        shape = input.shape
        y = torch.tensor([other], dtype=res_dtype, device=input.device)
        x = input.contiguous()
    else:
        shape = torch.broadcast_shapes(input.shape, other.shape)
        x = input.expand(shape).contiguous()  # no copy when shapes already match
        y = other.expand(shape).contiguous()
    result = torch.empty(shape, dtype=res_dtype, device=input.device)
    n = result.numel()
    grid = (triton.cdiv(n, block),)
    if n and res_dtype.is_complex:
        x, y = x.to(res_dtype), y.to(res_dtype)  # promotion of a real operand: imaginary part 0
        _cmul_kernel[grid](torch.view_as_real(x), torch.view_as_real(y), torch.view_as_real(result), n,
                           Y_IS_SCALAR=scalar, BLOCK=block, num_warps=8)
    elif n:
        dst = result.view(torch.uint8) if res_dtype == torch.bool else result
        if res_dtype == torch.bool:
            x, y = x.view(torch.uint8), y.view(torch.uint8)  # bool * bool is logical and: 0/1 product
        upcast = res_dtype in (torch.float16, torch.bfloat16)
        _mul_kernel[grid](x, y, dst, n, Y_IS_SCALAR=scalar, UPCAST=upcast, BLOCK=block, num_warps=8)
    if out is not None:
        out.resize_(shape).copy_(result)
        return out
    return result
