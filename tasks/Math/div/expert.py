"""Expert kernel for Math/div: one streaming pass of x / y with optional 'trunc' / 'floor' rounding."""

import torch
import triton
import triton.language as tl

BLOCK = 4096
_MODES = {None: 0, "trunc": 1, "floor": 2}


@triton.jit
def _div_kernel(x_ptr, y_ptr, out_ptr, n, y_scalar, Y_IS_SCALAR: tl.constexpr, MODE: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if Y_IS_SCALAR:
        y = y_scalar
    else:
        y = tl.load(y_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    q = x / y
    if MODE == 1:
        q = tl.where(q < 0, tl.ceil(q), tl.floor(q))
    elif MODE == 2:
        q = tl.floor(q)
    tl.store(out_ptr + offs, q.to(out_ptr.dtype.element_ty), mask=mask)


def div(input, other, rounding_mode=None, out=None):
    if rounding_mode not in _MODES:
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    scalar = not isinstance(other, torch.Tensor)
    res_dtype = torch.result_type(input, other)
    if rounding_mode is None and not res_dtype.is_floating_point:
        res_dtype = torch.get_default_dtype()  # true division of integers gives a float
    if scalar:
        shape = input.shape
        x = input.contiguous()
        y = x  # placeholder pointer, never read
    else:
        shape = torch.broadcast_shapes(input.shape, other.shape)
        x = input.expand(shape).contiguous()  # no copy when shapes already match
        y = other.expand(shape).contiguous()
    if out is not None and out.shape == shape and out.dtype == res_dtype and out.is_contiguous():
        result = out
    else:
        result = torch.empty(shape, dtype=res_dtype, device=input.device)
    n = result.numel()
    if n:
        _div_kernel[(triton.cdiv(n, BLOCK),)](
            x, y, result, n, float(other) if scalar else 1.0, Y_IS_SCALAR=scalar, MODE=_MODES[rounding_mode],
            BLOCK=BLOCK, num_warps=8,
        )
    if out is not None and result is not out:
        out.resize_(shape).copy_(result)
    return out if out is not None else result
