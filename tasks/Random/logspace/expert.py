"""Expert kernel for Random/logspace: each element forms its exponent and raises base to it.

Like torch, the lower half of the range is stepped from `start` and the upper half back from `end`
(so both end points are exact). The exponent and power are computed in the output dtype (fp32 or
fp64); the scalars travel in a tiny device tensor of that dtype so fp64 outputs keep fp64 inputs.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _logspace_kernel(out_ptr, scal_ptr, steps, half, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < steps
    start = tl.load(scal_ptr)
    end = tl.load(scal_ptr + 1)
    step = tl.load(scal_ptr + 2)
    ln_base = tl.load(scal_ptr + 3)
    i = offs.to(start.dtype)
    j = (steps - 1 - offs).to(start.dtype)
    x = tl.where(offs < half, start + i * step, end - j * step)
    tl.store(out_ptr + offs, tl.exp(x * ln_base).to(out_ptr.dtype.element_ty), mask=mask)


def logspace(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    dtype = dtype or torch.get_default_dtype()
    if dtype not in (torch.float32, torch.float64):
        raise NotImplementedError(f"logspace expert supports float32 and float64, got {dtype}")
    steps = int(steps)
    out = torch.empty((steps,), dtype=dtype, device=device)
    if steps > 0:
        step = (float(end) - float(start)) / (steps - 1) if steps > 1 else 0.0
        scal = torch.tensor([float(start), float(end), step, math.log(float(base))], dtype=dtype, device=out.device)
        _logspace_kernel[(triton.cdiv(steps, BLOCK),)](out, scal, steps, max(steps // 2, 1), BLOCK=BLOCK)
    if requires_grad:
        out.requires_grad_(True)
    return out
