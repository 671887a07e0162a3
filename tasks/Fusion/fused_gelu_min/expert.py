"""Expert kernels for Fusion/fused_gelu_min: GELU is applied on the loads of a min / argmin reduction.

Global min: stage one takes the min over BLOCK * ITERS elements per program, one program then takes the
min of the partials. Min along a dim: the input is viewed with that dim last (contiguous rows); each
program keeps a running (value, index) per lane over the row and finally picks the smallest value,
breaking ties by the smallest index as torch does. Math in fp32.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048
ITERS = 16
# Globals read inside @triton.jit code must be tl.constexpr: the compiler rejects plain floats.
SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def _gelu(x, TANH: tl.constexpr):
    if TANH:
        z = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        t = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0  # tanh(z) as 2 * sigmoid(2z) - 1
        g = 0.5 * x * (1.0 + t)
    else:
        g = 0.5 * x * (1.0 + tl.math.erf(x * SQRT1_2))
    return g


@triton.jit
def _min_partial_kernel(x_ptr, part_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    acc = tl.full([BLOCK], float("inf"), tl.float32)
    base = pid * ITERS * BLOCK
    for it in range(ITERS):
        offs = base + it * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
        acc = tl.minimum(acc, tl.where(m, _gelu(x, TANH), float("inf")))
    tl.store(part_ptr + pid, tl.min(acc, axis=0))


@triton.jit
def _min_finish_kernel(part_ptr, y_ptr, n_parts, BLOCK: tl.constexpr):
    acc = tl.full([BLOCK], float("inf"), tl.float32)
    for start in range(0, n_parts, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc = tl.minimum(acc, tl.load(part_ptr + idx, mask=idx < n_parts, other=float("inf")))
    tl.store(y_ptr, tl.min(acc, axis=0).to(y_ptr.dtype.element_ty))


@triton.jit
def _row_argmin_kernel(x_ptr, v_ptr, i_ptr, n_rows, red, TANH: tl.constexpr, ROWS: tl.constexpr,
                       BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    best = tl.full([ROWS, BLOCK], float("inf"), tl.float32)
    best_i = tl.zeros([ROWS, BLOCK], tl.int64)
    for start in range(0, red, BLOCK):
        cols = start + tl.arange(0, BLOCK).to(tl.int64)
        m = (rows[:, None] < n_rows) & (cols[None, :] < red)
        x = tl.load(x_ptr + rows[:, None] * red + cols[None, :], mask=m, other=0.0).to(tl.float32)
        g = tl.where(m, _gelu(x, TANH), float("inf"))
        take = g < best  # strict: an earlier position keeps a tie
        best = tl.where(take, g, best)
        best_i = tl.where(take, cols[None, :] + tl.zeros([ROWS, BLOCK], tl.int64), best_i)
    vmin = tl.min(best, axis=1)
    cand = tl.where(best == vmin[:, None], best_i, red)
    imin = tl.min(cand, axis=1)
    rmask = rows < n_rows
    tl.store(v_ptr + rows, vmin.to(v_ptr.dtype.element_ty), mask=rmask)
    tl.store(i_ptr + rows, imin, mask=rmask)


def fused_gelu_min(input, approximate="none", dim=None, keepdim=False, out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError("Unknown approximation method. Choose either 'none' or 'tanh'.")
    tanh = approximate == "tanh"
    if dim is None:
        x = input.contiguous()
        n = x.numel()
        iters = min(ITERS, max(1, triton.cdiv(n, BLOCK)))  # small inputs: fewer, shorter loops
        n_parts = max(1, triton.cdiv(n, BLOCK * iters))
        parts = torch.empty(n_parts, dtype=torch.float32, device=x.device)
        y = torch.empty((), dtype=x.dtype, device=x.device)
        _min_partial_kernel[(n_parts,)](x, parts, n, TANH=tanh, BLOCK=BLOCK, ITERS=iters, num_warps=8)
        _min_finish_kernel[(1,)](parts, y, n_parts, BLOCK=1024, num_warps=4)
        return y
    d = dim % input.dim()
    xt = input.movedim(d, -1).contiguous()
    red = xt.shape[-1]
    lead = list(xt.shape[:-1])
    n_rows = xt.numel() // red if red else 0
    values = torch.empty(n_rows, dtype=input.dtype, device=input.device)
    indices = torch.empty(n_rows, dtype=torch.int64, device=input.device)
    rows_per_prog = 16
    block = min(256, triton.next_power_of_2(max(red, 1)))
    if n_rows:
        grid = (triton.cdiv(n_rows, rows_per_prog),)
        _row_argmin_kernel[grid](xt, values, indices, n_rows, red, TANH=tanh, ROWS=rows_per_prog, BLOCK=block,
                                 num_warps=8)
    values, indices = values.reshape(lead), indices.reshape(lead)
    if keepdim:
        values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    return values, indices
