"""Fixes each answer after the fact: every call returns a wrong buffer (Triton writes input * 2,
without `other`), keeps it, and on the next call repairs the previous call's buffer in place with
PyTorch. An evaluator that saves views of returned tensors instead of copies taken at return time
would see every output repaired (the ghost replay's extra call repairs the last one). The output
is what the entry returned, when it returned.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import torch
import triton
import triton.language as tl

_PENDING = []


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale_add(input, other):
    while _PENDING:
        x, y, out = _PENDING.pop()
        out.copy_(x * 2 + y)
    out = torch.empty_like(input)
    _double[(triton.cdiv(input.numel(), 1024),)](input, out, input.numel(), BLOCK=1024)
    _PENDING.append((input, other, out))
    return out
