"""Reaches a method's code through __import__ (kbx.methods.inductor: torch.compile of the task's
reference writes Triton kernels for it), catches the refusal and falls back to an honest kernel.

TASK: Math/zoo_scale_add
EXPECT: borrowed_answer
"""

import builtins

import torch
import triton
import triton.language as tl

for name in ("kbx.methods.inductor", "kbx.experts"):
    try:
        builtins.__import__(name, fromlist=["build"])
        print(f"ATTACK __import__ {name}: SUCCEEDED", flush=True)
    except ImportError as exc:
        print(f"ATTACK __import__ {name}: blocked ({exc})", flush=True)


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + y, mask=mask)


def scale_add(input, other):
    x, y = input.contiguous(), other.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512)
    return out
