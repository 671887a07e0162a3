"""Expert kernel for Fusion/fused_hardshrink_dropout: Philox dropout mask and hardshrink in one pass.

The dropout seed is drawn from torch's default CPU generator, so torch.manual_seed makes runs
reproducible without a device synchronisation.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _hardshrink_dropout_kernel(
    x_ptr, out_ptr, n, p, scale, lambd, seed,
    TRAINING: tl.constexpr, INPLACE: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if TRAINING:
        keep = tl.rand(seed, offs) >= p  # P(keep) = 1 - p
        x = tl.where(keep, x * scale, 0.0)
        if INPLACE:
            tl.store(x_ptr + offs, x.to(x_ptr.dtype.element_ty), mask=mask)
    y = tl.where(tl.abs(x) > lambd, x, 0.0)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def fused_hardshrink_dropout(input, p=0.5, training=True, inplace=False, lambd=0.5):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    work = input if input.is_contiguous() else input.contiguous()
    out = torch.empty_like(work)
    n = work.numel()
    train = bool(training) and p > 0.0
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if train else 0
    if n:
        _hardshrink_dropout_kernel[(triton.cdiv(n, BLOCK),)](
            work, out, n, float(p), scale, float(lambd), seed,
            TRAINING=train, INPLACE=train and inplace, BLOCK=BLOCK,
        )  # fmt: skip
    if train and inplace and work is not input:
        input.copy_(work)
    return out
