"""Expert kernel for Loss/kl_div: one elementwise pass (0 * log 0 = 0 when log_target is False);
reductions write per-block partial sums added by a single-program second pass in a fixed order."""

import torch
import triton
import triton.language as tl

BLOCK = 4096
RBLOCK = 1024


@triton.jit
def _kl_kernel(x_ptr, t_ptr, out_ptr, n, LOG_TARGET: tl.constexpr, REDUCE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if LOG_TARGET:
        loss = tl.exp(t) * (t - x)
    else:
        # xlogy(t, t) - t * x: 0 where t == 0 (log of a negative target stays NaN, as in torch)
        loss = tl.where(t == 0.0, 0.0, t * tl.log(t)) - t * x
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


def kl_div(input, target, reduction="batchmean", log_target=False):
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"invalid reduction {reduction!r}")
    x, t = input.contiguous(), target.contiguous()
    n = x.numel()
    if reduction == "none":
        out = torch.empty_like(x)
        if n:
            _kl_kernel[(triton.cdiv(n, BLOCK),)](x, t, out, n, LOG_TARGET=log_target, REDUCE=False, BLOCK=BLOCK)
        return out
    blocks = max(triton.cdiv(n, BLOCK), 1)
    parts = torch.zeros(blocks, dtype=torch.float32, device=x.device)
    if n:
        _kl_kernel[(blocks,)](x, t, parts, n, LOG_TARGET=log_target, REDUCE=True, BLOCK=BLOCK)
    if reduction == "mean":
        scale = 1.0 / n if n else float("nan")
    elif reduction == "batchmean":
        scale = 1.0 / x.shape[0] if x.dim() else 1.0
    else:
        scale = 1.0
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _finish_kernel[(1,)](parts, out, blocks, scale, RBLOCK=RBLOCK)
    return out
