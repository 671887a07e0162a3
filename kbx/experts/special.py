"""Special functions as Triton device functions: digamma, which the expert solutions of `Math/digamma` and
`Math/polygamma` (order 0) share, trigamma (`Math/polygamma`'s order 1), and the Hurwitz zeta function
(`Math/zeta`, and `Math/polygamma`'s higher orders).
"""

import triton
import triton.language as tl


@triton.jit
def digamma_pos(x):
    """psi(x) for x > 0: the recurrence psi(x) = psi(x + 1) - 1 / x, six steps below 6, then the asymptotic series.
    The six reciprocals are summed as one fraction num / den (1/a + b/c = (c + a b) / (a c)): one division
    instead of six; den <= 12^6, far from fp32's range."""
    small = x < 6.0
    num = tl.zeros_like(x)
    den = tl.zeros_like(x) + 1.0
    for i in tl.static_range(6):
        a = x + i
        num = num * a + den
        den = den * a
    r = tl.where(small, -num / den, 0.0)
    x = tl.where(small, x + 6.0, x)
    inv = 1.0 / x
    z = inv * inv
    tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))))
    return r + tl.log(x) - 0.5 * inv - tail


@triton.jit
def digamma(x):
    """psi(x) for any x: reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0, computed only in blocks that
    hold a negative x; psi(0) = -inf, NaN at negative integers (as torch)."""
    neg = x < 0.0
    y = tl.where(neg, 1.0 - x, tl.where(x == 0.0, 1.0, x))
    r = digamma_pos(y)
    if tl.min(x, axis=0) < 0.0:
        frac = x - tl.floor(x)  # reduce before multiplying by pi, for an accurate cot near large |x|
        pix = 3.141592653589793 * frac
        r = tl.where(neg, r - 3.141592653589793 * tl.cos(pix) / tl.sin(pix), r)
        r = tl.where(neg & (x == tl.floor(x)), float("nan"), r)
    r = tl.where(x == 0.0, float("-inf"), r)
    return r


@triton.jit
def trigamma_pos(x):
    """psi_1(x) for x > 0: the recurrence psi_1(x) = psi_1(x + 1) + 1 / x^2, six steps below 6 summed as one
    fraction (den <= 12^12, far from fp32's range), then the asymptotic series
    1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7) - 1/(30x^9), whose next term is below 2e-8 relative at 6."""
    small = x < 6.0
    num = tl.zeros_like(x)
    den = tl.zeros_like(x) + 1.0
    for i in tl.static_range(6):
        a2 = (x + i) * (x + i)
        num = num * a2 + den
        den = den * a2
    r = tl.where(small, num / den, 0.0)
    x = tl.where(small, x + 6.0, x)
    inv = 1.0 / x
    z = inv * inv
    return r + inv + 0.5 * z + inv * z * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30))))


@triton.jit
def trigamma(x):
    """psi_1(x) for any x: reflection psi_1(x) = pi^2 / sin^2(pi x) - psi_1(1 - x) for x <= 0, computed only in
    blocks that hold such an x; +inf at 0 and the negative integers (as torch)."""
    neg = x <= 0.0
    r = trigamma_pos(tl.where(neg, 1.0 - x, x))
    if tl.min(x, axis=0) <= 0.0:
        s = tl.sin(3.141592653589793 * (x - tl.floor(x)))  # sin^2(pi x) has period 1: reduce first
        r = tl.where(neg, 9.869604401089358 / (s * s) - r, r)
    return r


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
def hurwitz_zeta(x, q):
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
