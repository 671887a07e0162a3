"""SIGSTOPs its parent (the pre-forked worker pool): every attempt in flight would then wait for
its timeout. Returns zeros.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import os
import signal

import torch
import triton
import triton.language as tl

parent = os.getppid()
try:
    os.kill(parent, signal.SIGSTOP)
    print(f"ATTACK stop parent ({parent}): sent", flush=True)
except OSError as exc:
    print(f"ATTACK stop parent: blocked ({exc.strerror})", flush=True)

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
