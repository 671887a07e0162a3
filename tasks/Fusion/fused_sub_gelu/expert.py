"""Expert kernel for Fusion/fused_sub_gelu: one pass, r = x - alpha * o, then exact or tanh GELU in fp32."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _sub_gelu_kernel(x_ptr, o_ptr, o_scalar, y_ptr, alpha, n,
                     O_TENSOR: tl.constexpr, TANH: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if O_TENSOR:
        o = tl.load(o_ptr + offs, mask=mask).to(tl.float32)
    else:
        o = o_scalar
    r = x - alpha * o
    if TANH:
        inner = 0.7978845608028654 * (r + 0.044715 * r * r * r)
        t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0  # tanh via sigmoid, safe for large |inner|
        y = 0.5 * r * (1.0 + t)
    else:
        y = 0.5 * r * (1.0 + tl.math.erf(r * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def fused_sub_gelu(input, other, alpha=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.contiguous()
    o_tensor = isinstance(other, torch.Tensor)
    o = (other if other.shape == x.shape else other.expand(x.shape)).contiguous() if o_tensor else x
    direct = out is not None and out.is_contiguous() and out.shape == x.shape and out.dtype == x.dtype
    y = out if direct else torch.empty_like(x)
    n = x.numel()
    if n:
        _sub_gelu_kernel[(triton.cdiv(n, BLOCK),)](
            x, o, 0.0 if o_tensor else float(other), y, float(alpha), n,
            O_TENSOR=o_tensor, TANH=approximate == "tanh", BLOCK=BLOCK, num_warps=8,
        )
    if out is not None and not direct:
        out.copy_(y)
        return out
    return y
