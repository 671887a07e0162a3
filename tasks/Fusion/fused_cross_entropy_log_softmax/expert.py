"""Expert kernels for Fusion/fused_cross_entropy_log_softmax (2-D logits; log_softmax twice over the class
dim is log_softmax once, up to rounding).

A row kernel makes one pass over each row's logits keeping an online max / sum of exponentials plus the
class-weighted sums sum_c w[c] x[c] and sum_c w[c]; with lse the row's log-sum-exp, the target term is
-w[t] (x[t] - lse) and the smoothing term -(sum_c w[c] x[c] - lse * sum_c w[c]) / C. Per-row losses are
stored for reduction='none'; otherwise each program writes partial sums of the loss and of w[t] (the
'mean' denominator), which a one-program kernel combines.
"""

import torch
import triton
import triton.language as tl

ROWS = 16
BLOCK_C = 128


@triton.jit
def _ce_rows_kernel(x_ptr, t_ptr, w_ptr, loss_ptr, part_ptr, N, C, ignore_index, smoothing, HAS_W: tl.constexpr,
                    PER_ROW: tl.constexpr, ROWS: tl.constexpr, BLOCK_C: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < N
    run_max = tl.full([ROWS], float("-inf"), tl.float32)
    run_sum = tl.zeros([ROWS], tl.float32)
    wx = tl.zeros([ROWS], tl.float32)
    wsum = tl.zeros([ROWS], tl.float32)
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        cm = cols < C
        m = rmask[:, None] & cm[None, :]
        x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=m, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(x, axis=1))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe_max) + tl.sum(tl.exp(x - safe_max[:, None]), axis=1)
        run_max = new_max
        if HAS_W:
            w = tl.load(w_ptr + cols, mask=cm, other=0.0).to(tl.float32)
        else:
            w = tl.where(cm, 1.0, 0.0)
        wx += tl.sum(tl.where(m, x, 0.0) * w[None, :], axis=1)  # masked lanes have w = 0
        wsum += tl.sum(tl.where(m, w[None, :] + tl.zeros([ROWS, BLOCK_C], tl.float32), 0.0), axis=1)
    lse = tl.where(rmask, run_max + tl.log(tl.where(rmask, run_sum, 1.0)), 0.0)
    t = tl.load(t_ptr + rows, mask=rmask, other=ignore_index)
    valid = rmask & (t != ignore_index)
    t_safe = tl.where(valid, t, 0).to(tl.int64)
    xt = tl.load(x_ptr + rows * C + t_safe, mask=valid, other=0.0).to(tl.float32)
    if HAS_W:
        wt = tl.load(w_ptr + t_safe, mask=valid, other=0.0).to(tl.float32)
    else:
        wt = tl.where(valid, 1.0, 0.0)
    nll = -wt * (xt - lse)
    smooth = -(wx - lse * wsum) / C
    loss = tl.where(valid, (1.0 - smoothing) * nll + smoothing * smooth, 0.0)
    if PER_ROW:
        tl.store(loss_ptr + rows, loss.to(loss_ptr.dtype.element_ty), mask=rmask)
    else:
        tl.store(part_ptr + pid * 2, tl.sum(loss, axis=0))
        tl.store(part_ptr + pid * 2 + 1, tl.sum(tl.where(valid, wt, 0.0), axis=0))


@triton.jit
def _finish_kernel(part_ptr, y_ptr, n_parts, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    den = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        i = start + tl.arange(0, BLOCK)
        m = i < n_parts
        acc += tl.load(part_ptr + i * 2, mask=m, other=0.0)
        den += tl.load(part_ptr + i * 2 + 1, mask=m, other=0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.sum(den, axis=0)
    tl.store(y_ptr, total.to(y_ptr.dtype.element_ty))


def fused_cross_entropy_log_softmax(input, target, dim: int = 1, weight=None, ignore_index: int = -100,
                                    reduction: str = "mean", label_smoothing: float = 0.0) -> torch.Tensor:  # fmt: skip
    if input.dim() != 2 or dim not in (1, -1):
        raise ValueError("this kernel handles 2-D (N, C) logits with dim=1")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    x = input.contiguous()
    t = target.contiguous()
    n, c = x.shape
    n_parts = max(1, triton.cdiv(n, ROWS))
    per_row = reduction == "none"
    loss = torch.empty(n, dtype=x.dtype, device=x.device)
    parts = torch.zeros(n_parts * 2, dtype=torch.float32, device=x.device)
    w = weight.contiguous() if weight is not None else x  # unused placeholder when absent
    if n:
        _ce_rows_kernel[(n_parts,)](x, t, w, loss, parts, n, c, int(ignore_index), float(label_smoothing),
                                    HAS_W=weight is not None, PER_ROW=per_row, ROWS=ROWS,
                                    BLOCK_C=min(BLOCK_C, triton.next_power_of_2(c)), num_warps=4)  # fmt: skip
    if per_row:
        return loss
    y = torch.empty((), dtype=x.dtype, device=x.device)
    _finish_kernel[(1,)](parts, y, n_parts, MEAN=reduction == "mean", BLOCK=1024, num_warps=4)
    return y
