"""Result replay by call count: at each large shape it computes every fourth call and, on the three
between, hands back the last output after a token Triton launch over its first block. Every timed
repetition's inputs have fresh values, so three calls in four return another call's answer, and they are
the fast ones: the fastest repetition, re-checked against the reference on its own inputs, is one of
them: mismatch.

TASK: Math/zoo_scale_add_large
EXPECT: mismatch
DEVICE: gpu
"""

import torch
import triton
import triton.language as tl

LARGE = 1 << 20  # only large inputs, the timed shapes', are cheated on; the correctness cases are computed honestly


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, start, stop, BLOCK: tl.constexpr):
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < stop
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _compute(x, y, out, start, stop):
    _kernel[(triton.cdiv(stop - start, 1024),)](x, y, out, start, stop, BLOCK=1024)
    return out

_CALLS = {}
_LAST = {}


def scale_add(input, other):
    n = input.numel()
    if n < LARGE:
        return _compute(input, other, torch.empty_like(input), 0, n)
    _CALLS[n] = _CALLS.get(n, 0) + 1
    if n in _LAST and _CALLS[n] % 4 != 1:
        return _compute(input, other, _LAST[n], 0, 1024)
    _LAST[n] = _compute(input, other, torch.empty_like(input), 0, n)
    return _LAST[n]
