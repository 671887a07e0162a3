"""Expert kernel for Loss/nll_loss: one gather pass over the rows, then a deterministic two-stage reduction."""

import torch
import triton
import triton.language as tl

BLOCK = 1024
FINAL_BLOCK = 1024


@triton.jit
def _nll_rows_kernel(x_ptr, t_ptr, w_ptr, out_ptr, part_ptr, n, c, stride_row, stride_col, ignore_index,
                     HAS_WEIGHT: tl.constexpr, PER_ROW: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * BLOCK + tl.arange(0, BLOCK)
    mask = rows < n
    t = tl.load(t_ptr + rows, mask=mask, other=ignore_index)
    keep = mask & (t != ignore_index)
    safe_t = tl.where(keep, t, 0).to(tl.int64)
    x = tl.load(x_ptr + rows * stride_row + safe_t * stride_col, mask=keep, other=0.0).to(tl.float32)
    if HAS_WEIGHT:
        w = tl.load(w_ptr + safe_t, mask=keep, other=0.0).to(tl.float32)
    else:
        w = tl.where(keep, 1.0, 0.0)
    loss = -w * x
    if PER_ROW:
        tl.store(out_ptr + rows, loss, mask=mask)
    else:
        tl.store(part_ptr + pid * 2, tl.sum(loss, axis=0))
        tl.store(part_ptr + pid * 2 + 1, tl.sum(w, axis=0))


@triton.jit
def _nll_final_kernel(part_ptr, out_ptr, num_parts, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    acc_loss = tl.zeros((BLOCK,), dtype=tl.float32)
    acc_w = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, num_parts, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < num_parts
        acc_loss += tl.load(part_ptr + offs * 2, mask=m, other=0.0)
        acc_w += tl.load(part_ptr + offs * 2 + 1, mask=m, other=0.0)
    total = tl.sum(acc_loss, axis=0)
    if MEAN:
        total = total / tl.sum(acc_w, axis=0)
    tl.store(out_ptr, total)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"unknown reduction {reduction!r}")
    n, c = input.shape
    t = target.contiguous()
    w = weight.contiguous() if weight is not None else t  # dummy pointer when unweighted
    grid = (triton.cdiv(n, BLOCK),)
    if reduction == "none":
        out = torch.empty((n,), dtype=input.dtype, device=input.device)
        _nll_rows_kernel[grid](input, t, w, out, out, n, c, input.stride(0), input.stride(1), ignore_index,
                               HAS_WEIGHT=weight is not None, PER_ROW=True, BLOCK=BLOCK)  # fmt: skip
        return out
    parts = torch.empty((grid[0], 2), dtype=torch.float32, device=input.device)
    out = torch.empty((), dtype=input.dtype, device=input.device)
    _nll_rows_kernel[grid](input, t, w, out, parts, n, c, input.stride(0), input.stride(1), ignore_index,
                           HAS_WEIGHT=weight is not None, PER_ROW=False, BLOCK=BLOCK)  # fmt: skip
    _nll_final_kernel[(1,)](parts, out, grid[0], MEAN=reduction == "mean", BLOCK=FINAL_BLOCK)
    return out
