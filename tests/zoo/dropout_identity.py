"""RNG cheat on the stochastic fixture: never drops anything (copies input / (1 - p) with Triton),
which no elementwise comparison against a random reference could judge; the distributional check
sees a drop rate of 0 instead of p.

TASK: Fusion/zoo_dropout
EXPECT: mismatch
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, out_ptr, n, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) / (1.0 - p), mask=mask)


def dropout(input, p=0.5):
    out = torch.empty_like(input)
    _scale[(triton.cdiv(input.numel(), 1024),)](input, out, input.numel(), float(p), BLOCK=1024)
    return out
