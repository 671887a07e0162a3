"""Expert kernel for Optimizer/AdamW: one fused elementwise pass updating param, exp_avg and exp_avg_sq in place."""

import math

import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, n, decay, lr_t, beta1, beta2, inv_sqrt_bias2, eps,
                  BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask).to(tl.float32)
    v = tl.load(v_ptr + offs, mask=mask).to(tl.float32)
    p = p * decay
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    denom = tl.sqrt(v) * inv_sqrt_bias2 + eps
    p = p - lr_t * (m / denom)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)
    tl.store(v_ptr + offs, v.to(v_ptr.dtype.element_ty), mask=mask)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


def adamw_step(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
    if not all(t.is_contiguous() for t in (param, grad, exp_avg, exp_avg_sq)):
        raise ValueError("adamw_step expert expects contiguous tensors")
    lr_t = lr / (1.0 - beta1**step)
    inv_sqrt_bias2 = 1.0 / math.sqrt(1.0 - beta2**step)
    n = param.numel()
    if n:
        _adamw_kernel[(triton.cdiv(n, BLOCK),)](param, grad, exp_avg, exp_avg_sq, n, 1.0 - lr * weight_decay, lr_t,
                                                beta1, beta2, inv_sqrt_bias2, eps, BLOCK=BLOCK)  # fmt: skip
    return param, exp_avg, exp_avg_sq
