"""Writes a marker file into the kbx checkout, torch's site-packages, root's home and the host's
/tmp (the test checks the host afterwards: none may exist there), and looks for kbx's stores in
its working directory (records and cached LLM answers: other methods' kernels to copy); returns
zeros.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import kbx

import os

import torch
import triton
import triton.language as tl

MARKER = ".kbx-zoo-escape"
TARGETS = [os.path.dirname(os.path.dirname(kbx.__file__)), os.path.dirname(torch.__file__), "/root", "/tmp",
           os.path.expanduser("~")]

for target in TARGETS:
    try:
        with open(os.path.join(target, MARKER), "w") as f:
            f.write("escaped")
        print(f"ATTACK write {target}: written (inside the sandbox)", flush=True)
    except OSError as exc:
        print(f"ATTACK write {target}: blocked ({exc.strerror})", flush=True)
for store in (os.path.join(TARGETS[0], name) for name in ("mlruns", ".kbx_cache")):
    found = os.path.isdir(store) and os.listdir(store)
    print(f"ATTACK read {store}: {'SUCCEEDED' if found else 'blocked'}", flush=True)

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
