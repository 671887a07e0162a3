"""Stochastic fixture, wrong output type: a correct Triton dropout whose result is returned as a
Python list. The structure must be checked before the task's distributional check ever sees the
output (a check written for tensors would otherwise fail inside the judge).

TASK: Fusion/zoo_dropout
EXPECT: wrong_type
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
    out = torch.empty_like(input)
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
    _dropout[(triton.cdiv(input.numel(), 1024),)](input, out, input.numel(), float(p), seed, BLOCK=1024)
    return out.tolist()
