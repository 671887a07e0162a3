"""Timing cheat: does the (correct) work on a side CUDA stream behind a ~20 ms GPU sleep and returns
without synchronising, so CUDA events on the default stream time almost nothing. The worker's
device-wide sync keeps the output right; the host wall-clock cross-check fails it: hidden work.
GPU only.

TASK: Math/zoo_scale_add
EXPECT: hidden_work
DEVICE: gpu
"""

import torch
import triton
import triton.language as tl

_SIDE = None


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    global _SIDE
    if _SIDE is None:
        _SIDE = torch.cuda.Stream()
    out = torch.empty_like(input)
    _SIDE.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_SIDE):
        torch.cuda._sleep(40_000_000)
        _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    return out
