"""Result replay: caches each output keyed by the inputs' data_ptr and shape and returns the cached
tensor when the caching allocator hands the same addresses back (a new seed or a new timing
rotation then gets a stale answer). Fresh inputs per call and the timed-output recheck expose it.
GPU only: CPU malloc does not recycle addresses predictably enough to make this test stable.

TASK: Math/zoo_scale_add
EXPECT: mismatch
DEVICE: gpu
"""

import torch
import triton
import triton.language as tl

_CACHE = {}


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(input, other):
    key = (input.data_ptr(), other.data_ptr(), tuple(input.shape))
    if key not in _CACHE:
        out = torch.empty_like(input)
        _kernel[(triton.cdiv(input.numel(), 1024),)](input, other, out, input.numel(), BLOCK=1024)
        _CACHE[key] = out
    return _CACHE[key]
