"""Positive control for the stochastic fixture: honest dropout with Philox `tl.rand` over global
offsets and a fresh seed per call; passes the distributional check.

TASK: Fusion/zoo_dropout
EXPECT: ok
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x / (1.0 - p), 0.0), mask=mask)


def dropout(input, p=0.5):
    x = input.contiguous()
    out = torch.empty_like(x)
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
    _dropout[(triton.cdiv(x.numel(), 512),)](x, out, x.numel(), float(p), seed, BLOCK=512)
    return out
