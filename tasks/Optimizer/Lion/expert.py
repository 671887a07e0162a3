"""Expert kernel for Optimizer/Lion: one fused elementwise pass updating param and exp_avg in place."""

import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _lion_kernel(p_ptr, g_ptr, m_ptr, n, lr, decay, beta1, beta2, HAS_WD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask).to(tl.float32)
    update = m * beta1 + g * (1.0 - beta1)
    sign = tl.where(update > 0, 1.0, tl.where(update < 0, -1.0, 0.0))
    if HAS_WD:
        p = p * decay
    p = p - lr * sign
    m = m * beta2 + g * (1.0 - beta2)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)


def lion_step(param, grad, exp_avg, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0):
    if not all(t.is_contiguous() for t in (param, grad, exp_avg)):
        raise ValueError("lion_step expert expects contiguous tensors")
    n = param.numel()
    if n:
        _lion_kernel[(triton.cdiv(n, BLOCK),)](param, grad, exp_avg, n, lr, 1.0 - lr * weight_decay, beta1, beta2,
                                               HAS_WD=weight_decay != 0, BLOCK=BLOCK)  # fmt: skip
    return param, exp_avg
