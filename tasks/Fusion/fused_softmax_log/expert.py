"""Expert kernel for Fusion/fused_softmax_log: softmax(log x) is x / sum(x) along the row; one program
per tile of rows, a chunked sum pass and a chunked scale pass (rows of any length). Negative elements
poison the row sum with NaN, as log does in the reference."""

import torch
import triton
import triton.language as tl

BLOCK = 2048
TILE = 4096  # elements per program tile: R rows x BLOCK columns


@triton.jit
def _softmax_log_kernel(x_ptr, y_ptr, nrows, L, F64: tl.constexpr, R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)
    rm = rows < nrows
    base = rows * L
    cols = tl.arange(0, BLOCK)
    if F64:
        acc = tl.zeros([R, BLOCK], dtype=tl.float64)
    else:
        acc = tl.zeros([R, BLOCK], dtype=tl.float32)
    for start in range(0, L, BLOCK):
        m = rm[:, None] & ((start + cols) < L)[None, :]
        x = tl.load(x_ptr + base[:, None] + start + cols[None, :], mask=m, other=0.0).to(acc.dtype)
        acc += tl.where(x < 0, float("nan"), x)
    total = tl.sum(acc, axis=1)
    inv = 1.0 / total
    for start in range(0, L, BLOCK):
        m = rm[:, None] & ((start + cols) < L)[None, :]
        x = tl.load(x_ptr + base[:, None] + start + cols[None, :], mask=m, other=0.0).to(acc.dtype)
        y = tl.where(x < 0, float("nan"), x * inv[:, None])
        y = tl.where((total != total)[:, None], float("nan"), y)
        tl.store(y_ptr + base[:, None] + start + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=m)


def fused_softmax_log(input: torch.Tensor, dim: int = -1, dtype: torch.dtype | None = None) -> torch.Tensor:
    out_dtype = dtype if dtype is not None else input.dtype
    if input.dim() == 0:
        input = input.reshape(1)
        squeeze = True
    else:
        squeeze = False
    d = dim % input.dim()
    x = input.movedim(d, -1).contiguous()  # layout glue for dim != -1
    y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    L = x.shape[-1]
    rows = x.numel() // L if L else 0
    if rows:
        blk = min(BLOCK, triton.next_power_of_2(L))
        r = max(1, TILE // blk)  # several short rows per program
        _softmax_log_kernel[(triton.cdiv(rows, r),)](x, y, rows, L, F64=out_dtype == torch.float64, R=r, BLOCK=blk,
                                                      num_warps=8)  # fmt: skip
    y = y.movedim(-1, d)
    return y.reshape(()) if squeeze else y
