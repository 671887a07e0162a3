"""Expert kernel for Math/bitwise_and_binomial: Binomial(total_count, p) samples from Philox uniforms.

Each count is a sum of total_count Bernoulli(p) trials, one tl.rand uniform per trial (counter = element index
* max_count + trial), so the draw is exactly binomial; cost grows with the largest count (10 here). The
int32 AND of the reference is discarded there, so it has no observable effect and is not computed.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _binomial_kernel(total_ptr, p_ptr, out_ptr, numel, max_count, seed, TOTAL_SCALAR: tl.constexpr,
                     LOGITS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    if TOTAL_SCALAR:
        count = tl.load(total_ptr).to(tl.float32)
    else:
        count = tl.load(total_ptr + offs, mask=mask, other=0).to(tl.float32)
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if LOGITS:
        p = 1.0 / (1.0 + tl.exp(-p))
    k = tl.zeros((BLOCK,), dtype=tl.float32)
    base = offs * max_count
    for j in range(0, max_count):
        u = tl.rand(seed, base + j)
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
    max_count = int(total.max().item()) if numel else 0
    if numel:
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
        _binomial_kernel[(triton.cdiv(numel, BLOCK),)](total, p, out, numel, max(max_count, 0), seed,
                                                       TOTAL_SCALAR=scalar_total, LOGITS=use_logits, BLOCK=BLOCK,
                                                       num_warps=4)
    return out
