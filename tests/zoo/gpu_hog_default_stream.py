"""A hog: an honest kernel, plus a thread started at import that launches 8192^2 fp32 matmuls on the default
stream (which its own calls use too) forever and never waits for them, so the GPU's launch queue stays
full (tens of seconds of work), and each of its own calls waits behind that queue. Stopping its process
stops the launches, not the queued work, so no other attempt's timing window goes quiet. kbx finds the
process whose work keeps running (NVML per-process utilisation, or elimination), ends it, and charges
it: it runs a thread of its own. Its neighbours are timed.

TASK: Math/zoo_scale_add
EXPECT: hidden_work
DEVICE: gpu
"""

import threading

import torch
import triton
import triton.language as tl

SIDE = 8192


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _hog():
    a = torch.randn(SIDE, SIDE, device="cuda")
    while True:
        a @ a


threading.Thread(target=_hog, daemon=True).start()


def scale_add(input, other):
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    return out
