"""Expert kernel for Loss/binary_cross_entropy: one elementwise pass (logs clamped at -100, log(1-p) via a
log1p-accurate form); 'mean'/'sum' write per-block partial sums added by a single-program second pass."""

import torch
import triton
import triton.language as tl

BLOCK = 4096
RBLOCK = 1024


@triton.jit
def _log1m(p):
    # log(1 - p) accurate for small p: log(u) * (-p) / (u - 1) with u = 1 - p (exact when u == 1: -p)
    u = 1.0 - p
    safe = tl.where(u == 1.0, 0.5, u)
    return tl.where(u == 1.0, -p, tl.log(safe) * (-p) / (safe - 1.0))


@triton.jit
def _bce_kernel(p_ptr, t_ptr, w_ptr, out_ptr, n, HAS_W: tl.constexpr, REDUCE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.5).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    log_p = tl.maximum(tl.log(p), -100.0)
    log_q = tl.where(p == 1.0, -100.0, tl.maximum(_log1m(p), -100.0))
    loss = -(t * log_p + (1.0 - t) * log_q)
    if HAS_W:
        loss = loss * tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
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


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"invalid reduction {reduction!r}")
    p, t = input.contiguous(), target.contiguous()
    w = torch.broadcast_to(weight, p.shape).contiguous() if weight is not None else p
    n = p.numel()
    if reduction == "none":
        out = torch.empty_like(p)
        if n:
            _bce_kernel[(triton.cdiv(n, BLOCK),)](p, t, w, out, n, HAS_W=weight is not None, REDUCE=False, BLOCK=BLOCK)
        return out
    blocks = max(triton.cdiv(n, BLOCK), 1)
    parts = torch.zeros(blocks, dtype=torch.float32, device=p.device)
    if n:
        _bce_kernel[(blocks,)](p, t, w, parts, n, HAS_W=weight is not None, REDUCE=True, BLOCK=BLOCK)
    out = torch.empty((), dtype=p.dtype, device=p.device)
    scale = (1.0 / n if n else float("nan")) if reduction == "mean" else 1.0
    _finish_kernel[(1,)](parts, out, blocks, scale, RBLOCK=RBLOCK)
    return out
