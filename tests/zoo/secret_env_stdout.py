"""Dumps its whole environment (names and values) to stdout, then computes the
right answer. The worker's environment is scrubbed of secrets, and anything echoed back is
redacted, so the driver's fake KBX_TEST_API_KEY must appear nowhere in the record.

TASK: Math/zoo_scale_add
EXPECT: ok
"""

import os

import torch
import triton
import triton.language as tl

for name, value in sorted(os.environ.items()):
    print(f"ENV {name}={value}")
print("KBX NAMES:", sorted(n for n in os.environ if "KBX" in n))  # last, so it survives tail truncation


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
    return out
