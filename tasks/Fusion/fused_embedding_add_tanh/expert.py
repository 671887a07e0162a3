"""Expert kernels for Fusion/fused_embedding_add_tanh.

Lookup kernel: each program gathers ROWS embedding rows (a BLOCK_D slice of each), adds the matching
slice of `other` and applies tanh (as 2 * sigmoid(2x) - 1) before one store; fp32 math.
With max_norm, a renorm kernel first rescales in place each distinct referenced row whose norm exceeds
max_norm (one program per row, on deduplicated indices so no row is rescaled twice concurrently).
"""

import math

import torch
import triton
import triton.language as tl

ROWS = 16
BLOCK_D = 128


@triton.jit
def _renorm_kernel(w_ptr, idx_ptr, dim, max_norm, norm_type, P_KIND: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.load(idx_ptr + tl.program_id(0)).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < dim
    ptrs = w_ptr + row * dim + cols
    x = tl.load(ptrs, mask=m, other=0.0).to(tl.float32)
    a = tl.abs(x)
    if P_KIND == 0:  # p = 2
        norm = tl.sqrt(tl.sum(x * x, axis=0))
    elif P_KIND == 1:  # p = 1
        norm = tl.sum(a, axis=0)
    elif P_KIND == 2:  # p = inf
        norm = tl.max(a, axis=0)
    else:  # general p > 0: (sum |x|^p)^(1/p)
        powed = tl.where(a > 0, tl.exp(norm_type * tl.log(tl.maximum(a, 1e-38))), 0.0)
        s = tl.sum(tl.where(m, powed, 0.0), axis=0)
        norm = tl.where(s > 0, tl.exp(tl.log(tl.maximum(s, 1e-38)) / norm_type), 0.0)
    scale = tl.where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)
    big = (a * 0.0 + norm) > max_norm  # the row-wide decision, broadcast to the lanes
    tl.store(ptrs, (x * scale).to(w_ptr.dtype.element_ty), mask=m & big)


@triton.jit
def _lookup_add_tanh_kernel(idx_ptr, w_ptr, o_ptr, y_ptr, n_rows, dim, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)
    rmask = rows < n_rows
    idx = tl.load(idx_ptr + rows, mask=rmask, other=0).to(tl.int64)
    m = rmask[:, None] & (cols[None, :] < dim)
    e = tl.load(w_ptr + idx[:, None] * dim + cols[None, :], mask=m, other=0.0).to(tl.float32)
    o = tl.load(o_ptr + rows[:, None] * dim + cols[None, :], mask=m, other=0.0).to(tl.float32)
    s = e + o
    t = 2.0 / (1.0 + tl.exp(-2.0 * s)) - 1.0
    tl.store(y_ptr + rows[:, None] * dim + cols[None, :], t.to(y_ptr.dtype.element_ty), mask=m)


def fused_embedding_add_tanh(input_indices, weight, other, *, padding_idx=None, max_norm=None, norm_type=2.0,
                             scale_grad_by_freq=False, sparse=False, out=None) -> torch.Tensor:  # fmt: skip
    dim = weight.shape[1]
    idx = input_indices.reshape(-1).contiguous()
    if max_norm is not None and idx.numel():
        if not weight.is_contiguous():
            raise ValueError("max_norm renormalization needs a contiguous weight")
        rows = torch.unique(idx)
        p = float(norm_type)
        kind = 0 if p == 2.0 else 1 if p == 1.0 else 2 if math.isinf(p) else 3
        block = triton.next_power_of_2(dim)
        _renorm_kernel[(rows.numel(),)](weight, rows, dim, float(max_norm), p, P_KIND=kind, BLOCK=block,
                                        num_warps=4)  # fmt: skip
    w = weight.contiguous()
    o = other.expand(*input_indices.shape, dim).contiguous()
    y = torch.empty((*input_indices.shape, dim), dtype=weight.dtype, device=weight.device)
    n_rows = idx.numel()
    if n_rows:
        grid = (triton.cdiv(n_rows, ROWS), triton.cdiv(dim, BLOCK_D))
        _lookup_add_tanh_kernel[grid](idx, w, o, y, n_rows, dim, ROWS=ROWS, BLOCK_D=BLOCK_D, num_warps=4)
    if out is not None:
        out.copy_(y)
    return y
