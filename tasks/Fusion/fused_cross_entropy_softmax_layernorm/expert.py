"""Expert kernels for Fusion/fused_cross_entropy_softmax_layernorm: one pass over the logits per row, then a
small reduction of the per-row losses.

Each program holds one row of C logits in registers: from its max and log-sum-exp it writes the row's
cross-entropy terms (the weighted negative log-likelihood of the target, the weighted sum of -log p over
all classes for label smoothing, and the target's weight, all zero for an ignored row), and from the
softmax p it writes layer_norm(p) = (p - mean) / sqrt(biased var + eps). A second one-program kernel
combines the row terms as torch does: (1 - s) * nll + s / C * smooth, where 'mean' divides both sums by
the summed target weights (the count of rows not ignored when weight is None).
"""

import torch
import triton
import triton.language as tl

REDUCE_BLOCK = 1024
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


@triton.jit
def _row_kernel(x_ptr, t_ptr, w_ptr, y_ptr, nll_ptr, smooth_ptr, wt_ptr, C, ignore_index, eps,
                HAS_WEIGHT: tl.constexpr, BLOCK_C: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_C)
    cm = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=cm, other=-float("inf"))
    row_max = tl.max(x, axis=0)
    e = tl.where(cm, tl.exp(x - row_max), 0.0)
    total = tl.sum(e, axis=0)
    logp = tl.where(cm, x - row_max - tl.log(total), 0.0)
    # layer norm of the softmax over the row
    p = e / total
    mean = tl.sum(p, axis=0) / C
    d = tl.where(cm, p - mean, 0.0)
    var = tl.sum(d * d, axis=0) / C
    tl.store(y_ptr + row * C + cols, d / tl.sqrt(var + eps), mask=cm)
    # cross-entropy terms of the row
    t = tl.load(t_ptr + row)
    valid = t != ignore_index
    t_safe = tl.where(valid, t, 0)
    if HAS_WEIGHT:
        w = tl.load(w_ptr + cols, mask=cm, other=0.0)
        w_t = tl.load(w_ptr + t_safe)
    else:
        w = tl.where(cm, 1.0, 0.0)
        w_t = 1.0
    logp_t = tl.sum(tl.where(cols == t_safe, logp, 0.0), axis=0)
    smooth = -tl.sum(w * logp, axis=0)
    tl.store(nll_ptr + row, tl.where(valid, -w_t * logp_t, 0.0))
    tl.store(smooth_ptr + row, tl.where(valid, smooth, 0.0))
    tl.store(wt_ptr + row, tl.where(valid, w_t, 0.0))


@triton.jit
def _combine_kernel(nll_ptr, smooth_ptr, wt_ptr, loss_ptr, N, nll_scale, smooth_scale,
                    REDUCTION: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    if REDUCTION == 0:  # 'none': one loss per row
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < N
        nll = tl.load(nll_ptr + offs, mask=m, other=0.0)
        smooth = tl.load(smooth_ptr + offs, mask=m, other=0.0)
        tl.store(loss_ptr + offs, nll_scale * nll + smooth_scale * smooth, mask=m)
    else:
        acc_nll = tl.zeros([BLOCK], dtype=tl.float32)
        acc_smooth = tl.zeros([BLOCK], dtype=tl.float32)
        acc_wt = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, N, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            m = offs < N
            acc_nll += tl.load(nll_ptr + offs, mask=m, other=0.0)
            acc_smooth += tl.load(smooth_ptr + offs, mask=m, other=0.0)
            acc_wt += tl.load(wt_ptr + offs, mask=m, other=0.0)
        loss = nll_scale * tl.sum(acc_nll, axis=0) + smooth_scale * tl.sum(acc_smooth, axis=0)
        if REDUCTION == 1:
            loss = loss / tl.sum(acc_wt, axis=0)
        tl.store(loss_ptr, loss)


def fused_cross_entropy_softmax_layernorm(logits, targets, normalized_shape, weight=None, ignore_index=-100,
                                          reduction="mean", label_smoothing=0.0, eps=1e-05, *, out=None):  # fmt: skip
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if logits.dim() != 2 or targets.shape != logits.shape[:1]:
        raise RuntimeError(f"expected logits (N, C) and targets (N,), got {tuple(logits.shape)} and "
                           f"{tuple(targets.shape)}")  # fmt: skip
    shape = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    N, C = logits.shape
    if shape != (C,):
        raise RuntimeError(f"normalized_shape {shape} must be the class dimension ({C},)")
    x = logits.to(torch.float32).contiguous()
    t = targets.to(torch.int64).contiguous()
    w = weight.to(torch.float32).contiguous() if weight is not None else x
    y = torch.empty_like(x)
    terms = torch.empty((3, N), dtype=torch.float32, device=x.device)  # nll, smooth, target weight per row
    if N:
        _row_kernel[(N,)](x, t, w, y, terms[0], terms[1], terms[2], C, int(ignore_index), float(eps),
                          HAS_WEIGHT=weight is not None, BLOCK_C=triton.next_power_of_2(C))  # fmt: skip
    s = float(label_smoothing)
    code = REDUCTIONS[reduction]
    loss = torch.empty((N,) if code == 0 else (), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(N, REDUCE_BLOCK),) if code == 0 else (1,)
    if grid[0]:
        _combine_kernel[grid](terms[0], terms[1], terms[2], loss, N, 1.0 - s, s / C, REDUCTION=code,
                              BLOCK=REDUCE_BLOCK)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return loss, out
    return loss, y
