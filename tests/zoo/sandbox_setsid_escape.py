"""Double-forks a grandchild that calls setsid() and sleeps under a recognisable name, so it
outlives its process group's kill; the test looks for it on the host after the run (none may be
left). Returns zeros.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import sys

import os

import torch
import triton
import triton.language as tl

ESCAPEE = "kbx-zoo-escapee"

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", ESCAPEE])
    os._exit(0)
print("ATTACK setsid escapee: started", flush=True)

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
