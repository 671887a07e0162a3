"""Speed cheat: a real Triton kernel for every correctness case, but PyTorch for inputs whose size
is a power of two, which is what benchmark perf shapes usually are. The cases' launch check passes;
the launch check at each perf shape (the shape's first and estimating calls) does not. On the CPU
nothing is timed, so there is nothing to catch.

TASK: Math/zoo_scale_add
EXPECT: ok
EXPECT_GPU: no_triton
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    n = input.numel()
    if n & (n - 1) == 0:
        return input * 2 + other
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(n, 512),)](input, other, out, n, BLOCK=512)
    return out
