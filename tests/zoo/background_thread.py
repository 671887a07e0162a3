"""Returns a placeholder buffer at once and lets a background thread launch the (correct) Triton
kernel into it a quarter of a second later: the thread-deferral trick that hides work from a
timer. The output must be complete when the entry returns, so what was returned is not the answer.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import threading
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _later(input, other, out):
    time.sleep(0.25)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)


def scale_add(input, other):
    out = torch.full_like(input, 12345.0)
    threading.Thread(target=_later, args=(input, other, out), daemon=True).start()
    return out
