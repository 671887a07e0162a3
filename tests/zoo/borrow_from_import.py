"""Imports the Triton pieces kbx's experts share (kbx.experts), as an expert file copied whole does
(`tasks/Reduce/argmax/expert.py` submitted as a prediction imports kbx.experts.argreduce). Only
kbx's own expert kernels may: for any other code the import fails and the verdict is kbx's, not its.

TASK: Math/zoo_scale_add
EXPECT: borrowed_answer
"""

import torch
import triton
import triton.language as tl

from kbx.experts.matmul import product  # noqa: F401 - what it came for


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + y, mask=mask)


def scale_add(input, other):
    x, y = input.contiguous(), other.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512)
    return out
