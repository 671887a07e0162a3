"""A correct kernel that floods stdout and stderr (about 8 MB each) at import and on every call.
It must still be judged ok, and the record's output_tail must stay truncated.

TASK: Math/zoo_scale_add
EXPECT: ok
"""

import sys

import torch
import triton
import triton.language as tl

LINE = "spam " * 200 + "\n"
sys.stdout.write(LINE * 8000)
sys.stderr.write(LINE * 8000)


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    print(LINE * 100, end="")
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    print("TAIL-MARKER", flush=True)
    return out
