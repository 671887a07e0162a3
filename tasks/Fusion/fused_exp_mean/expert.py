"""Expert kernels for Fusion/fused_exp_mean: exp is applied on the loads of the mean reduction.

Global mean: each program of stage one sums exp over CHUNK consecutive elements, and one program then
adds the partial sums (deterministic, no atomics). Mean over one dim uses the (outer, R, inner) view of
the contiguous input: a rows kernel when inner == 1, else a columns kernel whose lanes run along the
contiguous inner dim so loads stay coalesced. Math in fp32.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048
ITERS = 16  # stage one: each program covers BLOCK * ITERS elements


@triton.jit
def _exp_partial_kernel(x_ptr, part_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], tl.float32)
    base = pid * ITERS * BLOCK
    for it in range(ITERS):
        offs = base + it * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
        acc += tl.where(m, tl.exp(x), 0.0)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _finish_kernel(part_ptr, y_ptr, n_parts, inv_count, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + idx, mask=idx < n_parts, other=0.0)
    tl.store(y_ptr, (tl.sum(acc, axis=0) * inv_count).to(y_ptr.dtype.element_ty))


@triton.jit
def _rows_kernel(x_ptr, y_ptr, n_rows, red, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], tl.float32)
    for start in range(0, red, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = (rows[:, None] < n_rows) & (cols[None, :] < red)
        x = tl.load(x_ptr + rows[:, None] * red + cols[None, :], mask=m, other=0.0).to(tl.float32)
        acc += tl.where(m, tl.exp(x), 0.0)
    tl.store(y_ptr + rows, (tl.sum(acc, axis=1) / red).to(y_ptr.dtype.element_ty), mask=rows < n_rows)


@triton.jit
def _cols_kernel(x_ptr, y_ptr, red, inner, RBLOCK: tl.constexpr, BLOCK: tl.constexpr):
    outer = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([RBLOCK, BLOCK], tl.float32)
    for start in range(0, red, RBLOCK):
        r = start + tl.arange(0, RBLOCK)
        m = (r[:, None] < red) & (cols[None, :] < inner)
        x = tl.load(x_ptr + (outer * red + r[:, None]) * inner + cols[None, :], mask=m, other=0.0).to(tl.float32)
        acc += tl.where(m, tl.exp(x), 0.0)
    out = (tl.sum(acc, axis=0) / red).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + outer * inner + cols, out, mask=cols < inner)


def fused_exp_mean(input, dim=None, keepdim=False, dtype=None, out=None) -> torch.Tensor:
    x = input.contiguous()
    if dtype is not None:
        x = x.to(dtype)
    if dim is None:
        n = x.numel()
        iters = min(ITERS, max(1, triton.cdiv(n, BLOCK)))  # small inputs: fewer, shorter loops
        n_parts = max(1, triton.cdiv(n, BLOCK * iters))
        parts = torch.empty(n_parts, dtype=torch.float32, device=x.device)
        y = torch.empty((), dtype=x.dtype, device=x.device)
        _exp_partial_kernel[(n_parts,)](x, parts, n, BLOCK=BLOCK, ITERS=iters, num_warps=8)
        _finish_kernel[(1,)](parts, y, n_parts, 1.0 / n if n else float("nan"), BLOCK=1024, num_warps=4)
        return y.reshape([1] * x.dim()) if keepdim else y
    d = dim % x.dim()
    shape = list(x.shape)
    red = shape[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = x.numel() // (outer * red) if outer * red else 0
    y = torch.empty(outer * inner, dtype=x.dtype, device=x.device)
    if inner == 1:
        rows_per_prog = 16
        block = min(256, triton.next_power_of_2(max(red, 1)))
        _rows_kernel[(triton.cdiv(outer, rows_per_prog),)](x, y, outer, red, ROWS=rows_per_prog, BLOCK=block,
                                                           num_warps=8)  # fmt: skip
    else:
        cblock = 128
        _cols_kernel[(outer, triton.cdiv(inner, cblock))](x, y, red, inner, RBLOCK=32, BLOCK=cblock, num_warps=4)
    out_shape = shape[:d] + ([1] if keepdim else []) + shape[d + 1 :]
    return y.reshape(out_shape)
