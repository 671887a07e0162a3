"""Expert kernel for Activation/gelu and its dtype variants gelu_bf16, gelu_fp16, gelu_int8.

One pass: load, fp32 math (exact erf or tanh form), one conversion on store (rounding for fp16/bf16,
truncation toward zero for int8). The int8 result is exact, so the fp32 value must round like torch's
near integers: e.g. tanh-form GELU(5) is 4.9999995 in fp32 (gives 4). tanh is therefore evaluated as
1 - 2 / (exp(2|z|) + 1), which rounds correctly near 1, rather than as 2 * sigmoid(2z) - 1, which
rounds 1 - 9e-8 up to 1.
"""

import torch
import triton
import triton.language as tl

# (BLOCK, num_warps) per input dtype, as tuned for each variant.
CONFIG = {
    torch.float32: (4096, 8),
    torch.bfloat16: (2048, 4),
    torch.float16: (8192, 8),
    torch.int8: (8192, 8),
}


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
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
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)  # float -> int8 truncates toward zero


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        block, warps = CONFIG[x.dtype]
        _gelu_kernel[(triton.cdiv(n, block),)](x, y, n, TANH=approximate == "tanh", BLOCK=block, num_warps=warps)
    return y


def gelu_bf16(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return gelu(input, approximate)


def gelu_fp16(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return gelu(input, approximate)


def gelu_int8(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return gelu(input, approximate)
