"""Expert kernel for Math/rad2deg_sqrt: one pass reading x once and writing x * 180 / pi and sqrt(x)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096
DEG_PER_RAD = 57.29577951308232


@triton.jit
def _rad2deg_sqrt_kernel(x_ptr, d_ptr, s_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(d_ptr + offs, (x * scale).to(d_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + offs, tl.sqrt(x).to(s_ptr.dtype.element_ty), mask=mask)  # NaN for x < 0


def rad2deg_sqrt(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = input.contiguous()
    d = torch.empty_like(x)
    s = torch.empty_like(x)
    n = x.numel()
    if n:
        _rad2deg_sqrt_kernel[(triton.cdiv(n, BLOCK),)](x, d, s, n, DEG_PER_RAD, BLOCK=BLOCK, num_warps=8)
    return d, s
