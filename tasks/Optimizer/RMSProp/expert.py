"""Expert kernel for Optimizer/RMSProp: one fused elementwise pass updating param and square_avg in place."""

import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _rmsprop_kernel(p_ptr, g_ptr, s_ptr, n, lr, alpha, eps, weight_decay, HAS_WD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    s = tl.load(s_ptr + offs, mask=mask).to(tl.float32)
    if HAS_WD:
        g = g + weight_decay * p
    s = alpha * s + (1.0 - alpha) * g * g
    p = p - lr * (g / (tl.sqrt(s) + eps))
    tl.store(s_ptr + offs, s.to(s_ptr.dtype.element_ty), mask=mask)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


def rmsprop_step(param, grad, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
    if not (param.is_contiguous() and grad.is_contiguous() and square_avg.is_contiguous()):
        raise ValueError("rmsprop_step expert expects contiguous tensors")
    n = param.numel()
    if n:
        _rmsprop_kernel[(triton.cdiv(n, BLOCK),)](param, grad, square_avg, n, lr, alpha, eps, weight_decay,
                                                  HAS_WD=weight_decay != 0, BLOCK=BLOCK)  # fmt: skip
    return param, square_avg
