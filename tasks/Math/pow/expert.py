"""Expert kernel for Math/pow: one streaming pass of x ** e for a scalar or tensor exponent.

Scalar exponents 2, 1, 0.5, -0.5 and -1 take exact or cheaper paths; otherwise x ** e = exp2(e * log2|x|)
with the sign and zero rules of pow (negative bases need an integer exponent, else NaN).
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _general_pow(x, e):
    ax = tl.abs(x)
    r = tl.exp2(e * tl.log2(ax))  # 0 ** e: exp2(e * -inf) gives 0 (e > 0) or inf (e < 0)
    r = tl.where(e == 0.0, 1.0, r)
    e_int = tl.floor(e) == e
    odd = e_int & ((tl.floor(e * 0.5) * 2.0) != e)
    r = tl.where((x < 0) & odd, -r, r)
    r = tl.where((x < 0) & ~e_int, float("nan"), r)
    return r


@triton.jit
def _pow_kernel(x_ptr, e_ptr, out_ptr, n, e_scalar, E_IS_SCALAR: tl.constexpr, SPECIAL: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if SPECIAL == 1:  # e == 2
        r = x * x
    elif SPECIAL == 2:  # e == 1
        r = x
    elif SPECIAL == 3:  # e == 0.5
        r = tl.sqrt(x)
    elif SPECIAL == 4:  # e == -0.5
        r = 1.0 / tl.sqrt(x)
    elif SPECIAL == 5:  # e == -1
        r = 1.0 / x
    else:
        if E_IS_SCALAR:
            e = tl.zeros_like(x) + e_scalar
        else:
            e = tl.load(e_ptr + offs, mask=mask, other=1.0).to(tl.float32)
        r = _general_pow(x, e)
    tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=mask)


_SPECIAL = {2.0: 1, 1.0: 2, 0.5: 3, -0.5: 4, -1.0: 5}


def pow(input_tensor, exponent, out=None):
    scalar = not isinstance(exponent, torch.Tensor)
    res_dtype = torch.result_type(input_tensor, exponent)
    if scalar:
        shape = input_tensor.shape
        x = input_tensor.to(res_dtype).contiguous()
        e = x  # placeholder pointer, never read
        special = _SPECIAL.get(float(exponent), 0)
    else:
        shape = torch.broadcast_shapes(input_tensor.shape, exponent.shape)
        x = input_tensor.to(res_dtype).expand(shape).contiguous()  # no copy when shapes match
        e = exponent.to(res_dtype).expand(shape).contiguous()
        special = 0
    result = torch.empty(shape, dtype=res_dtype, device=input_tensor.device)
    n = result.numel()
    if n:
        _pow_kernel[(triton.cdiv(n, BLOCK),)](
            x, e, result, n, float(exponent) if scalar else 0.0, E_IS_SCALAR=scalar, SPECIAL=special, BLOCK=BLOCK,
            num_warps=8,
        )
    if out is not None:
        out.resize_(shape).copy_(result)
        return out
    return result
