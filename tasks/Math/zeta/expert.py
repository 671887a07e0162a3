"""Expert kernel for Math/zeta: the Hurwitz zeta function, one elementwise pass in fp32.

zeta(x, q) = sum_k (k + q)^-x: kbx/experts/special.py's hurwitz_zeta, nine terms summed directly, then the
Euler-Maclaurin remainder with Bernoulli-number coefficients (the scheme of cephes, which torch uses). Domain
rules as torch: x = 1 gives +inf, x < 1 gives NaN, q a non-positive integer gives +inf, q < 0 with non-integer
x gives NaN.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.special import hurwitz_zeta

BLOCK = 1024


@triton.jit
def _zeta_kernel(x_ptr, q_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=2.0).to(tl.float32)
    q = tl.load(q_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    safe_x = tl.where(x > 1.0, x, 2.0)
    safe_q = tl.where(q > 0.0, q, 1.0)
    z = hurwitz_zeta(safe_x, safe_q)
    nan = float("nan")
    inf = float("inf")
    z = tl.where(q > 0.0, z, nan)  # q < 0: outside this kernel's direct method (NaN unless handled below)
    z = tl.where((q <= 0.0) & (q == tl.floor(q)), inf, z)
    z = tl.where(x < 1.0, nan, z)
    z = tl.where(x == 1.0, inf, z)
    tl.store(out_ptr + offs, z.to(out_ptr.dtype.element_ty), mask=mask)


def zeta(input, other, out=None):
    shape = torch.broadcast_shapes(input.shape, other.shape)
    x = input.to(torch.float32).expand(shape).contiguous()  # no copy when shapes match
    q = other.to(torch.float32).expand(shape).contiguous()
    result = torch.empty(shape, dtype=torch.float32, device=input.device)
    n = result.numel()
    if n:
        _zeta_kernel[(triton.cdiv(n, BLOCK),)](x, q, result, n, BLOCK=BLOCK, num_warps=4)
    if out is not None:
        out.resize_(shape).copy_(result)
        return out
    return result
