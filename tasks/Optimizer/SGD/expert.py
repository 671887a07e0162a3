"""Expert kernel for Optimizer/SGD: one fused elementwise pass updating param and momentum buffer in place."""

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _sgd_kernel(p_ptr, g_ptr, b_ptr, n, lr, momentum, weight_decay, one_minus_damp,
                HAS_WD: tl.constexpr, HAS_MOM: tl.constexpr, BUF_ZERO: tl.constexpr,
                NESTEROV: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    if HAS_WD:
        g = g + weight_decay * p
    if HAS_MOM:
        if BUF_ZERO:
            buf = one_minus_damp * g  # a fresh buffer starts at zero
        else:
            buf = momentum * tl.load(b_ptr + offs, mask=mask).to(tl.float32) + one_minus_damp * g
        tl.store(b_ptr + offs, buf.to(b_ptr.dtype.element_ty), mask=mask)
        if NESTEROV:
            d = g + momentum * buf
        else:
            d = buf
    else:
        d = g
    tl.store(p_ptr + offs, (p - lr * d).to(p_ptr.dtype.element_ty), mask=mask)


def sgd_step(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0,
             dampening=0.0, nesterov=False):
    has_mom = momentum != 0
    buf_zero = has_mom and momentum_buffer is None
    if buf_zero:
        momentum_buffer = torch.empty_like(param)  # filled by the kernel
    # the kernel updates contiguous storage; non-contiguous tensors go through a copy
    p = param if param.is_contiguous() else param.contiguous()
    g = grad.contiguous()
    b = None
    if has_mom:
        b = momentum_buffer if momentum_buffer.is_contiguous() else momentum_buffer.contiguous()
    n = p.numel()
    if n > 0:
        _sgd_kernel[(triton.cdiv(n, BLOCK),)](
            p, g, b if has_mom else p, n, float(lr), float(momentum), float(weight_decay),
            1.0 - float(dampening), HAS_WD=weight_decay != 0, HAS_MOM=has_mom, BUF_ZERO=buf_zero,
            NESTEROV=bool(nesterov), BLOCK=BLOCK,
        )
    if p is not param:
        param.copy_(p)
    if has_mom and b is not momentum_buffer:
        momentum_buffer.copy_(b)
    return param, (momentum_buffer if has_mom else None)
