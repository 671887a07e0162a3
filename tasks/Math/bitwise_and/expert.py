"""Expert kernel for Math/bitwise_and: one streaming pass of x & y on integer (or bool, as bytes) tensors."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _and_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ty = out_ptr.dtype.element_ty
    x = tl.load(x_ptr + offs, mask=mask).to(ty)
    y = tl.load(y_ptr + offs, mask=mask).to(ty)
    tl.store(out_ptr + offs, x & y, mask=mask)


def bitwise_and(input, other, out=None):
    if not isinstance(other, torch.Tensor):
        other = torch.tensor(other, device=input.device)
    res_dtype = torch.result_type(input, other)
    if res_dtype.is_floating_point or res_dtype.is_complex:
        raise RuntimeError("bitwise_and is only defined for integer and bool tensors")
    shape = torch.broadcast_shapes(input.shape, other.shape)
    x = input.expand(shape).contiguous()  # no copy when the shapes already match
    y = other.expand(shape).contiguous()
    result = torch.empty(shape, dtype=res_dtype, device=input.device)
    n = result.numel()
    if n:
        if res_dtype == torch.bool:  # bools are bytes holding 0 or 1: AND them as uint8
            x, y, dst = x.view(torch.uint8), y.view(torch.uint8), result.view(torch.uint8)
        else:
            dst = result
        _and_kernel[(triton.cdiv(n, BLOCK),)](x, y, dst, n, BLOCK=BLOCK, num_warps=8)
    if out is not None:
        out.resize_(shape).copy_(result)
        return out
    return result
