"""Expert kernel for Fusion/fused_mul_sub: one elementwise pass, y = a * b - alpha * c in fp32.

Python-number operands are passed to the kernel as scalars; broadcast tensor operands are
expanded to the output shape first (full-size contiguous operands are used as they are).
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _mul_sub_kernel(a_ptr, b_ptr, c_ptr, a_s, b_s, c_s, y_ptr, alpha, n,
                    A_T: tl.constexpr, B_T: tl.constexpr, C_T: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if A_T:
        a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    else:
        a = a_s
    if B_T:
        b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    else:
        b = b_s
    if C_T:
        c = tl.load(c_ptr + offs, mask=mask).to(tl.float32)
    else:
        c = c_s
    y = a * b - alpha * c
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def fused_mul_sub(input, other_mul, other_sub, alpha=1, out=None):
    ops = (input, other_mul, other_sub)
    tensors = [v for v in ops if isinstance(v, torch.Tensor)]
    if not tensors:
        return input * other_mul - alpha * other_sub
    shape = torch.broadcast_shapes(*(t.shape for t in tensors))
    dtype = tensors[0].dtype  # the task's tensors are all fp32
    dev = tensors[0].device
    direct = out is not None and out.is_contiguous() and out.shape == shape and out.dtype == dtype
    y = out if direct else torch.empty(shape, dtype=dtype, device=dev)
    ptrs, scalars, flags = [], [], []
    for v in ops:
        if isinstance(v, torch.Tensor):
            t = v if (v.shape == shape and v.is_contiguous()) else v.expand(shape).contiguous()
            ptrs.append(t)
            scalars.append(0.0)
            flags.append(True)
        else:
            ptrs.append(y)  # unused placeholder pointer
            scalars.append(float(v))
            flags.append(False)
    n = y.numel()
    if n:
        _mul_sub_kernel[(triton.cdiv(n, BLOCK),)](
            ptrs[0], ptrs[1], ptrs[2], scalars[0], scalars[1], scalars[2], y, float(alpha), n,
            A_T=flags[0], B_T=flags[1], C_T=flags[2], BLOCK=BLOCK, num_warps=8,
        )
    if out is not None and not direct:
        out.copy_(y)
        return out
    return y
