"""Expert kernel for Loss/cross_entropy: each program takes a tile of (sample, position) rows, streams the
class dim in chunks with an online log-sum-exp, gathers the target logit, and writes per-row losses or
per-program partial sums (loss and weight); a single-program pass finishes 'mean'/'sum' in a fixed order."""

import torch
import triton
import triton.language as tl

RBLOCK = 1024


@triton.jit
def _ce_kernel(x_ptr, t_ptr, w_ptr, loss_ptr, part_loss_ptr, part_w_ptr, rows, C, S, ignore_index,
               HAS_W: tl.constexpr, REDUCE: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    r = pid * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    rmask = r < rows
    n = r // S
    s = r % S
    base = n * C * S + s  # element (n, c, s) lives at base + c * S
    m = tl.full([BLOCK_R], -1e30, dtype=tl.float32)
    acc = tl.zeros([BLOCK_R], dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C).to(tl.int64)
        mask = rmask[:, None] & (c < C)[None, :]
        x = tl.load(x_ptr + base[:, None] + c[None, :] * S, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        acc = acc * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    lse = m + tl.log(acc)
    t = tl.load(t_ptr + r, mask=rmask, other=0)
    valid = rmask & (t != ignore_index)
    t_safe = tl.where(valid, t, 0)
    x_t = tl.load(x_ptr + base + t_safe * S, mask=valid, other=0.0).to(tl.float32)
    if HAS_W:
        w = tl.load(w_ptr + t_safe, mask=valid, other=0.0).to(tl.float32)
    else:
        w = tl.where(valid, 1.0, 0.0)
    loss = tl.where(valid, (lse - x_t) * w, 0.0)
    if REDUCE:
        tl.store(part_loss_ptr + pid, tl.sum(loss, axis=0))
        tl.store(part_w_ptr + pid, tl.sum(w, axis=0))
    else:
        tl.store(loss_ptr + r, loss, mask=rmask)


@triton.jit
def _finish_kernel(part_loss_ptr, part_w_ptr, out_ptr, m, MEAN: tl.constexpr, RBLOCK: tl.constexpr):
    acc = tl.zeros([RBLOCK], dtype=tl.float32)
    wacc = tl.zeros([RBLOCK], dtype=tl.float32)
    for start in range(0, m, RBLOCK):
        offs = start + tl.arange(0, RBLOCK)
        acc += tl.load(part_loss_ptr + offs, mask=offs < m, other=0.0)
        wacc += tl.load(part_w_ptr + offs, mask=offs < m, other=0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.sum(wacc, axis=0)
    tl.store(out_ptr, total)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"invalid reduction {reduction!r}")
    x = input.contiguous()
    t = target.contiguous()
    n, c = x.shape[0], x.shape[1]
    s = x.numel() // max(n * c, 1)
    rows = n * s
    w = weight.contiguous() if weight is not None else x
    block_r, block_c = (8, 256) if s == 1 else (64, 16)
    grid = max(triton.cdiv(rows, block_r), 1)
    loss = torch.empty(t.shape, dtype=x.dtype, device=x.device)
    parts = torch.zeros((2, grid), dtype=torch.float32, device=x.device)
    _ce_kernel[(grid,)](x, t, w, loss, parts[0], parts[1], rows, c, s, ignore_index, HAS_W=weight is not None,
                        REDUCE=reduction != "none", BLOCK_R=block_r, BLOCK_C=block_c)  # fmt: skip
    if reduction == "none":
        return loss
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _finish_kernel[(1,)](parts[0], parts[1], out, grid, MEAN=reduction == "mean", RBLOCK=RBLOCK)
    return out
