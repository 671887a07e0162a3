"""Rewrites the task's reference to return zeros and deletes another task's folder, then returns
zeros: without a read-only world the judge would load the rewritten reference and say ok, and the
other task's honest attempts would crash. Every attack is reported in stdout as SUCCEEDED or
blocked.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import shutil
from pathlib import Path

import os

import torch
import triton
import triton.language as tl

TASKS = Path(os.environ.get("KBX_TASKS_DIR", "/nonexistent"))


def _attack(name, action):
    try:
        action()
        print(f"ATTACK {name}: SUCCEEDED", flush=True)
    except OSError as exc:
        print(f"ATTACK {name}: blocked ({exc.strerror})", flush=True)


def _rewrite():
    path = TASKS / "Math" / "zoo_scale_add" / "task.py"
    path.write_text(path.read_text().replace("return input * 2 + other", "return input * 0"))


_attack("rewrite reference", _rewrite)
_attack("delete another task", lambda: shutil.rmtree(TASKS / "Activation" / "zoo_relu_inplace"))

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
