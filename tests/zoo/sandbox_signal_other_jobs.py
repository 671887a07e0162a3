"""Stops and then kills every process it is allowed to signal (kill(-1)) and every process it can
see in /proc: other kbx jobs of the same user included. The test keeps a decoy "other job"
running beside the zoo and checks it survived, unstopped. Returns zeros.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import os
import signal

import torch
import triton
import triton.language as tl

visible = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (os.getpid(), 1)]
print(f"ATTACK visible processes: {len(visible)}", flush=True)
for pid in visible:
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
try:
    os.kill(-1, signal.SIGKILL)  # every process this user may signal, except itself
    print("ATTACK kill(-1): sent", flush=True)
except OSError as exc:
    print(f"ATTACK kill(-1): blocked ({exc.strerror})", flush=True)

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
