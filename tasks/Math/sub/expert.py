"""Expert kernel for Math/sub: one streaming pass computing x - alpha * y (y a tensor or a Python number)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _sub_kernel(x_ptr, y_ptr, out_ptr, n, alpha, y_scalar, Y_IS_SCALAR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if Y_IS_SCALAR:
        y = y_scalar
    else:
        y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x - alpha * y).to(out_ptr.dtype.element_ty), mask=mask)


def sub(input, other, *, alpha=1, out=None):
    scalar = not isinstance(other, torch.Tensor)
    res_dtype = torch.result_type(input, other)
    if scalar:
        shape = input.shape
        x = input.to(res_dtype).contiguous()
        y = x  # placeholder pointer, never read
    else:
        shape = torch.broadcast_shapes(input.shape, other.shape)
        # host-side broadcasting (a no-op for equal shapes): both operands at the output shape
        x = input.to(res_dtype).expand(shape).contiguous()
        y = other.to(res_dtype).expand(shape).contiguous()
    if out is not None and out.shape == shape and out.dtype == res_dtype and out.is_contiguous():
        result = out
    else:
        result = torch.empty(shape, dtype=res_dtype, device=input.device)
    n = result.numel()
    if n:
        _sub_kernel[(triton.cdiv(n, BLOCK),)](
            x, y, result, n, float(alpha), float(other) if scalar else 0.0, Y_IS_SCALAR=scalar, BLOCK=BLOCK,
            num_warps=8,
        )
    if out is not None and result is not out:
        out.resize_(shape).copy_(result)
    return out if out is not None else result
