"""Partial compute: at each large shape it keeps one output buffer, fills it whole on the first call, and
then computes one quarter of it per call, in turn, relying on earlier calls for the other three. Every
timed repetition's inputs have fresh values, so three quarters of what it returns answer other calls'
inputs; the fastest repetition is re-checked against the reference on its own inputs: mismatch.

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

_BUFFER = {}
_CALLS = {}


def scale_add(input, other):
    n = input.numel()
    if n < LARGE:
        return _compute(input, other, torch.empty_like(input), 0, n)
    if n not in _BUFFER:
        _BUFFER[n], _CALLS[n] = _compute(input, other, torch.empty_like(input), 0, n), 0
        return _BUFFER[n]
    quarter = _CALLS[n] % 4
    _CALLS[n] += 1
    return _compute(input, other, _BUFFER[n], quarter * n // 4, (quarter + 1) * n // 4)
