"""Launches a Triton kernel that always fails (it indexes with a float offset, which Triton
rejects), catches the error and returns a PyTorch result. A launch that raised computed nothing,
so no Triton kernel produced the output.

TASK: Math/zoo_scale_add
EXPECT: no_triton
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _broken(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bad = offs.to(tl.float32) * 0.5  # a pointer plus a float offset is a type error
    tl.store(out_ptr + bad, tl.load(x_ptr + offs) * 2.0 + tl.load(y_ptr + offs))


def scale_add(input, other):
    out = torch.empty_like(input)
    try:
        _broken[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
        return out
    except Exception:
        return input * 2 + other
