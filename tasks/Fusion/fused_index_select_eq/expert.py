"""Expert kernel for Fusion/fused_index_select_eq: the gather and the comparison happen in one pass and
only the bool result is written (the selected slices are never materialised).

The input is viewed as (outer, D, inner) around `dim`; output element (o, j, i) reads input
(o, index[j], i). `other` is a tensor expanded to the output shape, or a one-element tensor read by
every lane for a Python number; both sides are compared in their promoted dtype.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _index_select_eq_kernel(x_ptr, idx_ptr, o_ptr, y_ptr, n, n_idx, dim_size, inner, SCALAR: tl.constexpr,
                            BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i = offs % inner
    t = offs // inner
    j = t % n_idx
    o = t // n_idx
    src = tl.load(idx_ptr + j, mask=mask, other=0).to(tl.int64)
    x = tl.load(x_ptr + (o * dim_size + src) * inner + i, mask=mask)
    if SCALAR:
        other = tl.load(o_ptr)
    else:
        other = tl.load(o_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x.to(o_ptr.dtype.element_ty) == other, mask=mask)


def fused_index_select_eq(input, dim, index, other, *, out=None) -> torch.Tensor:
    x = input.contiguous()
    d = dim % max(x.dim(), 1)
    idx = index.reshape(-1).contiguous()
    shape = list(x.shape) if x.dim() else [1]
    dim_size = shape[d]
    inner = 1
    for s in shape[d + 1 :]:
        inner *= s
    sel_shape = shape[:d] + [idx.numel()] + shape[d + 1 :]
    if isinstance(other, torch.Tensor):
        common = torch.result_type(x, other)
        out_shape = list(torch.broadcast_shapes(tuple(sel_shape), tuple(other.shape)))
        if out_shape != sel_shape:  # other broadcasts the selection itself: rare; keep the plain path
            raise ValueError("other must be broadcastable to the selected shape")
        o = other.to(common).expand(sel_shape).contiguous()
        scalar = False
    else:
        common = torch.result_type(x, other)
        o = torch.full((1,), other, dtype=common, device=x.device)
        scalar = True
    y = torch.empty(sel_shape if x.dim() else [idx.numel()], dtype=torch.bool, device=x.device)
    n = y.numel()
    if n:
        _index_select_eq_kernel[(triton.cdiv(n, BLOCK),)](x, idx, o, y, n, idx.numel(), dim_size, inner,
                                                          SCALAR=scalar, BLOCK=BLOCK, num_warps=4)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
