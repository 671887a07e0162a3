"""Expert kernel for Index/index_select: one flat pass over the output, gathering by index."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _index_select_kernel(x_ptr, idx_ptr, y_ptr, total, inner, k, dim_size, BLOCK: tl.constexpr):
    # The input is viewed as (outer, dim_size, inner) and the output as (outer, k, inner);
    # consecutive output elements are written contiguously.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i_inner = offs % inner
    row = offs // inner
    i_k = row % k
    i_outer = row // k
    src_pos = tl.load(idx_ptr + i_k, mask=mask, other=0).to(tl.int64)
    src = (i_outer * dim_size + src_pos) * inner + i_inner
    vals = tl.load(x_ptr + src, mask=mask)
    tl.store(y_ptr + offs, vals, mask=mask)


def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    if index.dim() > 1:
        raise IndexError("index_select(): index must be a 0-D or 1-D tensor")
    x = input.contiguous()
    idx = index.reshape(-1).contiguous()
    if x.dim() == 0:
        x = x.reshape(1)
        out_shape = ()
        dim = 0
    else:
        dim = dim % x.dim()
        out_shape = (*x.shape[:dim], idx.numel(), *x.shape[dim + 1 :])
    dim_size = x.shape[dim]
    inner = 1
    for s in x.shape[dim + 1 :]:
        inner *= s
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    total = y.numel()
    if total > 0:
        grid = (triton.cdiv(total, BLOCK),)
        _index_select_kernel[grid](x, idx, y, total, inner, idx.numel(), dim_size, BLOCK=BLOCK)
    return y
