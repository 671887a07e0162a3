"""Expert kernels for Fusion/fused_sum_std.

The summed dimensions are moved last (a layout copy only when they are not already trailing), so the
sum is a row reduction: one program per block of rows sums its rows in chunks. A single program then
takes the standard deviation of the row sums in two passes (mean, then squared deviations).
"""

import math

import torch
import triton
import triton.language as tl

TILE = 4096  # elements per row-sum tile: COLS = min(1024, next_pow2(L)), ROWS = TILE // COLS
BLOCK = 1024


@triton.jit
def _row_sum_kernel(x_ptr, s_ptr, R, L, F64: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS).to(tl.int64)
    if F64:
        acc = tl.zeros((ROWS, COLS), dtype=tl.float64)
    else:
        acc = tl.zeros((ROWS, COLS), dtype=tl.float32)
    for c0 in range(0, L, COLS):
        cc = c0 + cols
        x = tl.load(x_ptr + rows[:, None] * L + cc[None, :], mask=(rows[:, None] < R) & (cc[None, :] < L), other=0.0)
        acc += x.to(acc.dtype)
    tl.store(s_ptr + rows, tl.sum(acc, axis=1), mask=rows < R)


@triton.jit
def _std_kernel(s_ptr, out_ptr, n, denom, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=s_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        acc += tl.load(s_ptr + start + offs, mask=start + offs < n, other=0.0)
    mean = tl.sum(acc, axis=0) / n
    acc2 = tl.zeros([BLOCK], dtype=s_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        m = start + offs < n
        d = tl.where(m, tl.load(s_ptr + start + offs, mask=m, other=0.0) - mean, 0.0)
        acc2 += d * d
    tl.store(out_ptr, tl.sqrt(tl.sum(acc2, axis=0) / denom))


def fused_sum_std(input, dim=None, keepdim=False, dtype=None, correction=1, out=None):
    out_dtype = dtype if dtype is not None else input.dtype
    nd = input.dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = sorted({d % nd for d in ((dim,) if isinstance(dim, int) else dim)}) if nd else []
    keep = [d for d in range(nd) if d not in dims]
    x = input.permute(*keep, *dims) if nd else input.reshape(1)
    x = x.contiguous()  # layout glue; a no-op when the summed dims are already trailing
    R = math.prod(input.shape[d] for d in keep) if nd else 1
    L = math.prod(input.shape[d] for d in dims) if nd else 1
    if R <= correction:
        return torch.zeros((), dtype=out_dtype, device=input.device)
    f64 = out_dtype == torch.float64
    acc_dtype = torch.float64 if f64 else torch.float32
    s = torch.empty(R, dtype=acc_dtype, device=input.device)
    cols = min(1024, triton.next_power_of_2(max(L, 1)))
    rows = TILE // cols
    _row_sum_kernel[(triton.cdiv(R, rows),)](x, s, R, L, F64=f64, ROWS=rows, COLS=cols, num_warps=4)
    res = torch.empty((), dtype=acc_dtype, device=input.device)
    _std_kernel[(1,)](s, res, R, float(R - correction), BLOCK=BLOCK, num_warps=4)
    return res.to(out_dtype)
