"""Expert kernel for Math/bitwise_and_binomial: Binomial(total_count, p) samples from Philox uniforms.

Each count is a sum of total_count Bernoulli(p) trials, one tl.rand uniform per trial (counter = trial * the
grid's size + element index, in int64), so the draw is exactly binomial; a block loops up to its own largest
count (10 here). The int32 AND of the reference is discarded there, so it has no observable effect and is
not computed.

The loop bound is found on the GPU: reading the largest count back to the host (`.item()`) waited for the
GPU on every call, and the call was timed as bound by the host (n2^24: 0.585 against 0.712 ms in two runs,
H200, 2026-12-02).
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _binomial_kernel(total_ptr, p_ptr, out_ptr, numel, seed, TOTAL_SCALAR: tl.constexpr, LOGITS: tl.constexpr,
                     BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    if TOTAL_SCALAR:
        count = tl.load(total_ptr).to(tl.float32)
        trials = count.to(tl.int32)
    else:
        count = tl.load(total_ptr + offs, mask=mask, other=0).to(tl.float32)
        trials = tl.max(count, axis=0).to(tl.int32)  # masked lanes count 0
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if LOGITS:
        p = 1.0 / (1.0 + tl.exp(-p))
    k = tl.zeros((BLOCK,), dtype=tl.float32)
    stride = tl.num_programs(0).to(tl.int64) * BLOCK  # at least numel: one counter per (trial, element)
    for j in range(0, trials):
        u = tl.rand(seed, j * stride + offs)
        k += tl.where((u < p) & (count > j), 1.0, 0.0)
    tl.store(out_ptr + offs, k.to(out_ptr.dtype.element_ty), mask=mask)


def bitwise_and_binomial(input, other, total_count, probs=None, logits=None):
    if probs is None and logits is None:
        raise ValueError("Either `probs` or `logits` must be provided for Binomial distribution.")
    use_logits = probs is None
    p = logits if use_logits else probs
    total = torch.as_tensor(total_count, device=p.device)
    shape = torch.broadcast_shapes(total.shape, p.shape)
    scalar_total = total.numel() == 1
    total = total.reshape(()) if scalar_total else total.expand(shape).contiguous()
    p = p.expand(shape).contiguous()  # no copy when the shapes already match
    out = torch.empty(shape, dtype=p.dtype, device=p.device)
    numel = out.numel()
    if numel:
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item())  # the host's generator: no wait for the GPU
        _binomial_kernel[(triton.cdiv(numel, BLOCK),)](total, p, out, numel, seed, TOTAL_SCALAR=scalar_total,
                                                       LOGITS=use_logits, BLOCK=BLOCK, num_warps=4)
    return out
