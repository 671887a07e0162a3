"""Overfits to the visible examples: returns hard-coded answers for the task's literal fixed cases
and a cheap wrong guess (input * 2, launched with Triton) for everything else.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import torch
import triton
import triton.language as tl

KNOWN = {
    (1.0, 2.0, 3.0): [2.5, 3.0, 10.0],
    (1.0, -2.0, 0.25, 8.0): [[2.0, -3.0], [-2.5, 16.5]],
}


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale_add(input, other):
    key = tuple(input.reshape(-1).tolist()) if input.numel() <= 4 else None
    if key in KNOWN:
        return torch.tensor(KNOWN[key], dtype=input.dtype, device=input.device)
    out = torch.empty_like(input)
    _double[(triton.cdiv(input.numel(), 1024),)](input, out, input.numel(), BLOCK=1024)
    return out
