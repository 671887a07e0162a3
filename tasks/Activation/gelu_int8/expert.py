"""Expert kernel for Activation/gelu_int8: int8 in, fp32 GELU, truncating conversion back to int8.

The int8 result is exact, so the fp32 value must round like torch's near integers: e.g. tanh-form GELU(5) is
4.9999995 in fp32 (gives 4). tanh is therefore evaluated as 1 - 2 / (exp(2|z|) + 1), which rounds correctly
near 1, rather than as 2 * sigmoid(2z) - 1, which rounds 1 - 9e-8 up to 1.
"""

import torch
import triton
import triton.language as tl

BLOCK = 8192


@triton.jit
def _gelu_int8_kernel(x_ptr, y_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        a = tl.abs(inner)
        t = 1.0 - 2.0 / (tl.exp(2.0 * a) + 1.0)  # exp overflow to inf gives t = 1
        t = tl.where(inner < 0, -t, t)
        y = 0.5 * x * (1.0 + t)
    else:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(tl.int8), mask=mask)  # float -> int conversion truncates toward zero


def gelu_int8(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _gelu_int8_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, TANH=approximate == "tanh", BLOCK=BLOCK, num_warps=8)
    return y
