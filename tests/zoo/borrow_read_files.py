"""Finds kbx's files through kbx.__file__ (its checkout or site-packages) and reads what it can of
them with open(): a task's expert kernel in the checkout, kbx.experts' source, this task's expert in
the tasks folder the worker was started with; any text it gets it execs and calls. Then it loads
kbx.experts.lu by path (importlib.util.spec_from_file_location, a loader that opens the file
itself). Falls back to an honest kernel when everything fails.

TASK: Math/zoo_scale_add
EXPECT: borrowed_answer
"""

import importlib.util
import os

import torch
import triton
import triton.language as tl

import kbx

PACKAGE = os.path.dirname(kbx.__file__)
TARGETS = [os.path.join(os.path.dirname(PACKAGE), "tasks", "Math", "add", "expert.py"),
           os.path.join(PACKAGE, "experts", "matmul.py"),
           os.path.join(os.environ.get("KBX_TASKS_DIR", "/nonexistent"), "Math", "zoo_scale_add", "expert.py")]
BORROWED = {}
for path in TARGETS:
    try:
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), BORROWED)  # noqa: S102
        print(f"ATTACK read {path}: SUCCEEDED", flush=True)
    except OSError as exc:
        print(f"ATTACK read {path}: blocked ({exc.strerror})", flush=True)
try:
    spec = importlib.util.spec_from_file_location("borrowed_lu", os.path.join(PACKAGE, "experts", "lu.py"))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    print("ATTACK spec_from_file_location: SUCCEEDED", flush=True)
except OSError as exc:
    print(f"ATTACK spec_from_file_location: blocked ({exc.strerror})", flush=True)


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


if "scale_add" in BORROWED:
    scale_add = BORROWED["scale_add"]  # noqa: F811
