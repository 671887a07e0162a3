"""Computes the right answer with Triton, but the kernel also overwrites `input` with zeros (the
classic trick that makes a reference computed afterwards on the same buffers see zeros).

TASK: Math/zoo_scale_add
EXPECT: input_mutated
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)
    tl.store(x_ptr + offs, x * 0.0, mask=mask)


def scale_add(input, other):
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    return out
