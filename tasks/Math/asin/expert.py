"""Expert kernel for Math/asin: arcsin in one elementwise pass, fp32 math.

|x| <= 0.5: odd minimax polynomial in x^2 (the cephes single-precision coefficients); |x| > 0.5: the identity
asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)), whose inner argument is <= 0.5. |x| > 1 gives NaN through the sqrt.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _asin_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    a = tl.abs(x)
    big = a > 0.5
    zb = 0.5 * (1.0 - a)
    z = tl.where(big, zb, a * a)
    s = tl.where(big, tl.sqrt(zb), a)
    poly = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z
            + 1.6666752422e-1)
    r = poly * z * s + s
    r = tl.where(big, 1.5707963267948966 - 2.0 * r, r)
    y = tl.where(x < 0, -r, r)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def asin(input_tensor: torch.Tensor) -> torch.Tensor:
    if not isinstance(input_tensor, torch.Tensor):
        raise ValueError("The input must be a torch.Tensor.")
    x = input_tensor.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _asin_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
    return y
