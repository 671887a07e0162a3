"""Expert kernel for Math/softmax: row-wise over the (rows, n) view with the softmax dim last.

Each program handles ROWS rows. Pass 1 keeps a running max and a rescaled running sum per lane
(online softmax), pass 2 writes exp(x - max) / sum. Math is fp32, or fp64 when dtype=torch.float64
is requested. Short rows fit in one tile, so several rows share a program.
"""

import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024
TILE = 4096  # elements per program tile


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr, FP64: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < n_rows
    base = rows[:, None] * n_cols
    cols = tl.arange(0, BLOCK)[None, :]
    acc_t = tl.float64 if FP64 else tl.float32
    m = tl.full([ROWS, BLOCK], float("-inf"), acc_t)
    s = tl.zeros([ROWS, BLOCK], acc_t)
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        mask = row_ok[:, None] & (idx < n_cols)
        x = tl.load(x_ptr + base + idx, mask=mask, other=float("-inf")).to(acc_t)
        m_new = tl.maximum(m, x)
        # lanes that have seen only -inf keep a zero sum (avoids inf - inf)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=1)
    s = tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max[:, None]))
    inv = 1.0 / tl.sum(s, axis=1)
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        mask = row_ok[:, None] & (idx < n_cols)
        x = tl.load(x_ptr + base + idx, mask=mask, other=float("-inf")).to(acc_t)
        y = tl.exp(x - row_max[:, None]) * inv[:, None]
        tl.store(y_ptr + base + idx, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(input: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    out_dtype = dtype if dtype is not None else input.dtype
    x = input.reshape(1) if input.dim() == 0 else input
    d = dim % x.dim()
    moved = d != x.dim() - 1
    xm = x.movedim(d, -1).contiguous() if moved else x.contiguous()
    n_cols = xm.shape[-1]
    n_rows = xm.numel() // max(n_cols, 1)
    y = torch.empty(xm.shape, dtype=out_dtype, device=xm.device)
    if xm.numel():
        block = min(triton.next_power_of_2(n_cols), MAX_BLOCK)
        rows = max(1, min(TILE // block, triton.next_power_of_2(n_rows)))
        _softmax_kernel[(triton.cdiv(n_rows, rows),)](
            xm, y, n_rows, n_cols, ROWS=rows, BLOCK=block, FP64=out_dtype == torch.float64, num_warps=8
        )
    if moved:
        y = y.movedim(-1, d).contiguous()
    return y.reshape(input.shape)
