"""Positive control for an in-place task: the kernel writes its input and returns it, which the
task allows (`inplace=True`), so this must not be reported as input_mutated.

TASK: Activation/zoo_relu_inplace
EXPECT: ok
"""

import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu_(input):
    _relu[(triton.cdiv(input.numel(), 1024),)](input, input.numel(), BLOCK=1024)
    return input
