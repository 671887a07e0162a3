"""Expert kernel for Math/zeta: the Hurwitz zeta function, one elementwise pass in fp32.

zeta(x, q) = sum_k (k + q)^-x: nine terms summed directly, then the Euler-Maclaurin remainder with
Bernoulli-number coefficients (the scheme of cephes, which torch uses). Domain rules as torch: x = 1 gives
+inf, x < 1 gives NaN, q a non-positive integer gives +inf, q < 0 with non-integer x gives NaN.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _pow_neg(a, x):
    """a ** -x for a > 0 (the only bases the sum below meets for q > 0)."""
    return tl.exp2(-x * tl.log2(a))


@triton.jit
def _em_step(s, t, done, x, w, k, ratio):
    # next Euler-Maclaurin correction: t *= (x + k) (x + k + 1) / w^2 * A[i-1] / A[i]; stop once negligible
    t = t * ((x + k) * (x + k + 1.0) / (w * w)) * ratio
    s = tl.where(done, s, s + t)
    done = done | (tl.abs(t) <= 1e-9 * tl.abs(s))
    return s, t, done


@triton.jit
def _hurwitz_zeta(x, q):
    """zeta(x, q) for x > 1, q > 0: nine direct terms, then the Euler-Maclaurin tail (cephes' scheme)."""
    s = _pow_neg(q, x)
    a = q
    b = s
    for _ in tl.static_range(9):
        a = a + 1.0
        b = _pow_neg(a, x)
        s = s + b
    w = a
    s = s + b * w / (x - 1.0) - 0.5 * b
    t = b * x / (w * 12.0)
    s = s + t
    done = tl.abs(t) <= 1e-9 * tl.abs(s)
    s, t, done = _em_step(s, t, done, x, w, 1.0, -0.016666666666666666)
    s, t, done = _em_step(s, t, done, x, w, 3.0, -0.023809523809523808)
    s, t, done = _em_step(s, t, done, x, w, 5.0, -0.025)
    s, t, done = _em_step(s, t, done, x, w, 7.0, -0.025252525252525252)
    s, t, done = _em_step(s, t, done, x, w, 9.0, -0.02531135531135531)
    s, t, done = _em_step(s, t, done, x, w, 11.0, -0.02532561505065123)
    s, t, done = _em_step(s, t, done, x, w, 13.0, -0.025329131652661065)
    s, t, done = _em_step(s, t, done, x, w, 15.0, -0.025330005504037485)
    s, t, done = _em_step(s, t, done, x, w, 17.0, -0.025330223381833928)
    s, t, done = _em_step(s, t, done, x, w, 19.0, -0.025330277786482926)
    s, t, done = _em_step(s, t, done, x, w, 21.0, -0.025330291380456792)
    return s


@triton.jit
def _zeta_kernel(x_ptr, q_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=2.0).to(tl.float32)
    q = tl.load(q_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    safe_x = tl.where(x > 1.0, x, 2.0)
    safe_q = tl.where(q > 0.0, q, 1.0)
    z = _hurwitz_zeta(safe_x, safe_q)
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
