"""Expert kernels for Fusion/fused_cosine_embedding_loss_with_normalization.

A row kernel reads each pair of rows once, accumulating the dot product and both squared norms in fp32,
forms the cosine of the L2-normalized rows and the per-row hinge loss, and writes either the per-row
losses ('none') or one partial sum per program; a one-program kernel adds the partials for 'sum'/'mean'.
"""

import torch
import triton
import triton.language as tl

ROWS = 16
BLOCK_D = 128


@triton.jit
def _row_loss_kernel(a_ptr, b_ptr, t_ptr, loss_ptr, part_ptr, N, D, margin, HAS_MARGIN: tl.constexpr,
                     PER_ROW: tl.constexpr, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < N
    dot = tl.zeros([ROWS, BLOCK_D], tl.float32)
    sa = tl.zeros([ROWS, BLOCK_D], tl.float32)
    sb = tl.zeros([ROWS, BLOCK_D], tl.float32)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        offs = rows[:, None] * D + cols[None, :]
        a = tl.load(a_ptr + offs, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=m, other=0.0).to(tl.float32)
        dot += a * b
        sa += a * a
        sb += b * b
    na = tl.maximum(tl.sqrt(tl.sum(sa, axis=1)), 1e-12)
    nb = tl.maximum(tl.sqrt(tl.sum(sb, axis=1)), 1e-12)
    cos = tl.sum(dot, axis=1) / (na * nb)
    t = tl.load(t_ptr + rows, mask=rmask, other=0).to(tl.float32)
    loss = tl.maximum(1.0 - cos * t, 0.0)
    if HAS_MARGIN:
        loss = tl.maximum(loss, margin - cos)
    loss = tl.where(rmask, loss, 0.0)
    if PER_ROW:
        tl.store(loss_ptr + rows, loss.to(loss_ptr.dtype.element_ty), mask=rmask)
    else:
        tl.store(part_ptr + pid, tl.sum(loss, axis=0))


@triton.jit
def _sum_kernel(part_ptr, y_ptr, n_parts, scale, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + i, mask=i < n_parts, other=0.0)
    tl.store(y_ptr, (tl.sum(acc, axis=0) * scale).to(y_ptr.dtype.element_ty))


def fused_cosine_embedding_loss_with_normalization(input1, input2, target, margin: float = 0,
                                                   reduction: str = "mean") -> torch.Tensor:  # fmt: skip
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"Invalid reduction method: {reduction}")
    a, b = input1.contiguous(), input2.contiguous()
    t = target.contiguous()
    n, d = a.shape
    n_parts = max(1, triton.cdiv(n, ROWS))
    per_row = reduction == "none"
    loss = torch.empty(n, dtype=a.dtype, device=a.device)
    parts = torch.zeros(n_parts, dtype=torch.float32, device=a.device)
    if n:
        _row_loss_kernel[(n_parts,)](a, b, t, loss, parts, n, d, float(margin), HAS_MARGIN=margin > 0,
                                     PER_ROW=per_row, ROWS=ROWS, BLOCK_D=BLOCK_D, num_warps=4)  # fmt: skip
    if per_row:
        return loss
    y = torch.empty((), dtype=a.dtype, device=a.device)
    scale = (1.0 / n if n else float("nan")) if reduction == "mean" else 1.0
    _sum_kernel[(1,)](parts, y, n_parts, scale, BLOCK=1024, num_warps=4)
    return y
