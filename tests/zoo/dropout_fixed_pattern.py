"""Dropout whose randomness repeats: Philox is seeded with a constant and indexed by the offset
inside the block, so every block drops the same positions on every call. Each block's drop rate
looks right; the distributional check notices that the mask repeats every BLOCK elements.

TASK: Fusion/zoo_dropout
EXPECT: mismatch
"""

import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _dropout(x_ptr, out_ptr, n, p, BLOCK: tl.constexpr):
    local = tl.arange(0, BLOCK)
    offs = tl.program_id(0) * BLOCK + local
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(1234, local) >= p
    tl.store(out_ptr + offs, tl.where(keep, x / (1.0 - p), 0.0), mask=mask)


def dropout(input, p=0.5):
    x = input.contiguous()
    out = torch.empty_like(x)
    _dropout[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), float(p), BLOCK=BLOCK)
    return out
