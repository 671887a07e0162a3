"""SIGKILLs its parent and its parent's process group (the pre-forked worker pool, shared with
the innocent attempts in flight beside it). Returns zeros.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import os
import signal

import torch
import triton
import triton.language as tl

parent = os.getppid()
group = os.getpgid(parent)  # 0 where the group's leader is out of sight: killpg(0) would hit this process
for what, action in (("parent", lambda: os.kill(parent, signal.SIGKILL)),
                     ("parent's group", lambda: os.killpg(group, signal.SIGKILL) if group else None)):
    try:
        action()
        print(f"ATTACK kill {what} ({parent}): sent", flush=True)
    except OSError as exc:
        print(f"ATTACK kill {what}: blocked ({exc.strerror})", flush=True)

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
