"""Expert kernels for Fusion/fused_add_mean: the add is fused into the loads of the mean reduction.

Global mean: two stages (per-program partial sums, then one program adds the partials), deterministic.
Mean over one dim of the (outer, R, inner) view: rows kernel when inner == 1 (reduced dim contiguous),
otherwise a columns kernel whose lanes run along the contiguous inner dim. Math in fp32.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096
CHUNK_ITERS = 16  # each stage-1 program sums BLOCK * CHUNK_ITERS elements


@triton.jit
def _load_sum_term(x_ptr, o_ptr, offs, mask, alpha, o_scalar, HAS_OTHER: tl.constexpr):
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_OTHER:
        o = tl.load(o_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    else:
        o = o_scalar
    return tl.where(mask, x + alpha * o, 0.0)


@triton.jit
def _partial_kernel(x_ptr, o_ptr, part_ptr, n, alpha, o_scalar, HAS_OTHER: tl.constexpr, BLOCK: tl.constexpr,
                    ITERS: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], tl.float32)
    for it in range(ITERS):
        offs = (pid * ITERS + it) * BLOCK + tl.arange(0, BLOCK)
        acc += _load_sum_term(x_ptr, o_ptr, offs, offs < n, alpha, o_scalar, HAS_OTHER)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _finish_kernel(part_ptr, y_ptr, n_parts, inv_count, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + idx, mask=idx < n_parts, other=0.0)
    tl.store(y_ptr, (tl.sum(acc, axis=0) * inv_count).to(y_ptr.dtype.element_ty))


@triton.jit
def _rows_kernel(x_ptr, o_ptr, y_ptr, n_rows, red, alpha, o_scalar, HAS_OTHER: tl.constexpr, ROWS: tl.constexpr,
                 BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], tl.float32)
    for start in range(0, red, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        offs = rows[:, None] * red + cols[None, :]
        mask = (rows[:, None] < n_rows) & (cols[None, :] < red)
        acc += _load_sum_term(x_ptr, o_ptr, offs, mask, alpha, o_scalar, HAS_OTHER)
    tl.store(y_ptr + rows, (tl.sum(acc, axis=1) / red).to(y_ptr.dtype.element_ty), mask=rows < n_rows)


@triton.jit
def _cols_kernel(x_ptr, o_ptr, y_ptr, red, inner, alpha, o_scalar, HAS_OTHER: tl.constexpr, RBLOCK: tl.constexpr,
                 BLOCK: tl.constexpr):  # fmt: skip
    outer = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([RBLOCK, BLOCK], tl.float32)
    for start in range(0, red, RBLOCK):
        r = start + tl.arange(0, RBLOCK)
        offs = (outer * red + r[:, None]) * inner + cols[None, :]
        mask = (r[:, None] < red) & (cols[None, :] < inner)
        acc += _load_sum_term(x_ptr, o_ptr, offs, mask, alpha, o_scalar, HAS_OTHER)
    tl.store(y_ptr + outer * inner + cols, (tl.sum(acc, axis=0) / red).to(y_ptr.dtype.element_ty), mask=cols < inner)


def fused_add_mean(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None) -> torch.Tensor:
    x = input.contiguous()
    has_other = isinstance(other, torch.Tensor) and other.dim() > 0
    if has_other:
        o = other.expand(x.shape).contiguous()
        o_scalar = 0.0
    else:
        o = x  # unused
        o_scalar = float(other.item() if isinstance(other, torch.Tensor) else other)
    out_dtype = dtype if dtype is not None else x.dtype
    alpha = float(alpha)
    if dim is None:
        n = x.numel()
        n_parts = max(1, triton.cdiv(n, BLOCK * CHUNK_ITERS))
        parts = torch.empty(n_parts, dtype=torch.float32, device=x.device)
        y = torch.empty((), dtype=out_dtype, device=x.device)
        _partial_kernel[(n_parts,)](x, o, parts, n, alpha, o_scalar, HAS_OTHER=has_other, BLOCK=BLOCK,
                                    ITERS=CHUNK_ITERS, num_warps=8)  # fmt: skip
        _finish_kernel[(1,)](parts, y, n_parts, 1.0 / n if n else float("nan"), BLOCK=1024, num_warps=4)
        return y.reshape([1] * x.dim()) if keepdim else y
    d = dim % x.dim()
    red = x.shape[d]
    outer = 1
    for s in x.shape[:d]:
        outer *= s
    inner = x.numel() // max(outer * red, 1)
    out_shape = list(x.shape)
    out_shape[d] = 1
    y = torch.empty(out_shape, dtype=out_dtype, device=x.device)
    if y.numel():
        if inner == 1:
            block = min(triton.next_power_of_2(red), 1024)
            rows = max(1, min(4096 // block, triton.next_power_of_2(outer)))
            _rows_kernel[(triton.cdiv(outer, rows),)](x, o, y, outer, red, alpha, o_scalar, HAS_OTHER=has_other,
                                                      ROWS=rows, BLOCK=block, num_warps=8)  # fmt: skip
        else:
            block = min(triton.next_power_of_2(inner), 256)
            rblock = max(1, min(4096 // block, triton.next_power_of_2(red)))
            _cols_kernel[(outer, triton.cdiv(inner, block))](x, o, y, red, inner, alpha, o_scalar,
                                                             HAS_OTHER=has_other, RBLOCK=rblock, BLOCK=block,
                                                             num_warps=8)  # fmt: skip
    return y if keepdim else y.squeeze(d)
