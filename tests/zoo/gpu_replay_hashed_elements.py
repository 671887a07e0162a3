"""Result replay keyed on a hash of a few elements (the first 16 of each input, read back to the host):
computes a large input's output once and, when the hash comes again, hands it back after a token Triton
launch over its first block (so every call launches Triton). Small inputs, the correctness cases', are
computed honestly. Every timed repetition's inputs have fresh values and a new `_version`, so while timed the hash never
matches: it computes every timed call, and its time is its own. The repeat probe (the last inputs again,
untouched) would find the kept answer, but this key is read back to the host, so the probe's call waits
on the host and the probe cannot judge it (kbx.sandbox.timing._replay_probe): the verdict is ok, at the
speed of honest work. What the timing must never do, count a kept answer, it does not.

TASK: Math/zoo_scale_add_large
EXPECT: ok
DEVICE: gpu
"""

import torch
import triton
import triton.language as tl

LARGE = 1 << 20  # only outputs of inputs this large are kept
TOKEN = 1024
_KEPT = {}


@triton.jit
def _kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _compute(x, y, out, n):
    _kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


def scale_add(input, other):
    if input.numel() < LARGE:
        return _compute(input, other, torch.empty_like(input), input.numel())
    key = hash(input.view(-1)[:16].cpu().numpy().tobytes() + other.view(-1)[:16].cpu().numpy().tobytes())
    if key in _KEPT:
        return _compute(input, other, _KEPT[key], TOKEN)
    _KEPT[key] = _compute(input, other, torch.empty_like(input), input.numel())
    return _KEPT[key]
