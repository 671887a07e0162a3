"""Expert kernel for Loss/smooth_l1_loss: one elementwise pass; 'mean'/'sum' write per-block partial sums
that a single-program second pass adds up in a fixed order (deterministic)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096
RBLOCK = 1024


@triton.jit
def _smooth_l1_kernel(x_ptr, y_ptr, out_ptr, n, beta, half_beta, inv_beta,
                      REDUCE: tl.constexpr, L1: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = tl.abs(x - y)
    if L1:
        loss = d
    else:
        loss = tl.where(d < beta, 0.5 * d * d * inv_beta, d - half_beta)
    if REDUCE:
        loss = tl.where(mask, loss, 0.0)
        tl.store(out_ptr + pid, tl.sum(loss, axis=0))
    else:
        tl.store(out_ptr + offs, loss, mask=mask)


@triton.jit
def _finish_kernel(part_ptr, out_ptr, m, scale, RBLOCK: tl.constexpr):
    acc = tl.zeros([RBLOCK], dtype=tl.float32)
    for start in range(0, m, RBLOCK):
        offs = start + tl.arange(0, RBLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < m, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


def smooth_l1_loss(input, target, beta=1.0, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"invalid reduction {reduction!r}")
    x, y = input.contiguous(), target.contiguous()
    n = x.numel()
    l1 = beta == 0
    inv_beta = 0.0 if l1 else 1.0 / beta
    if reduction == "none":
        out = torch.empty_like(x)
        if n:
            _smooth_l1_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, beta, 0.5 * beta, inv_beta,
                                                        REDUCE=False, L1=l1, BLOCK=BLOCK)  # fmt: skip
        return out
    blocks = max(triton.cdiv(n, BLOCK), 1)
    parts = torch.zeros(blocks, dtype=torch.float32, device=x.device)
    if n:
        _smooth_l1_kernel[(blocks,)](x, y, parts, n, beta, 0.5 * beta, inv_beta, REDUCE=True, L1=l1, BLOCK=BLOCK)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    scale = (1.0 / n if n else float("nan")) if reduction == "mean" else 1.0
    _finish_kernel[(1,)](parts, out, blocks, scale, RBLOCK=RBLOCK)
    return out
