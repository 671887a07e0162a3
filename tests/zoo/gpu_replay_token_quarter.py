"""The replay the timing was first beaten with (a gelu at 2.8x over eager whose largest shape "moved"
3.6 times the H100's copy bandwidth): computes a large shape's output once and, on later calls at that
shape, runs a token Triton pass over one quarter of the elements into the kept output and returns it.
Every timed repetition's inputs have fresh values, so three quarters of its output answer another call's
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

_KEPT = {}


def scale_add(input, other):
    n = input.numel()
    if n < LARGE:
        return _compute(input, other, torch.empty_like(input), 0, n)
    if n in _KEPT:
        return _compute(input, other, _KEPT[n], 0, n // 4)
    _KEPT[n] = _compute(input, other, torch.empty_like(input), 0, n)
    return _KEPT[n]
