"""Expert kernel for Index/index_fill_: one program per block of (outer, index entry, inner) positions;
each reads its index entry (wrapping negatives) and writes the fill value into x in place."""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _index_fill_kernel(x_ptr, idx_ptr, total, n_idx, size, inner, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < total
    per_outer = n_idx * inner
    o = offs // per_outer
    rem = offs - o * per_outer
    j = rem // inner
    r = rem - j * inner
    idx = tl.load(idx_ptr + j, mask=mask, other=0).to(tl.int64)
    idx = tl.where(idx < 0, idx + size, idx)
    vals = tl.full([BLOCK], value, dtype=tl.float32).to(x_ptr.dtype.element_ty)
    tl.store(x_ptr + (o * size + idx) * inner + r, vals, mask=mask)


def index_fill_(dim, x, index, value):
    if not x.is_contiguous():
        raise ValueError("index_fill_ expert expects a contiguous x")
    dim = dim % max(x.dim(), 1)
    size = x.shape[dim] if x.dim() else 1
    inner = 1
    for s in x.shape[dim + 1 :]:
        inner *= s
    outer = x.numel() // max(size * inner, 1)
    idx = index.reshape(-1).contiguous()
    total = outer * idx.numel() * inner
    if total:
        _index_fill_kernel[(triton.cdiv(total, BLOCK),)](x, idx, total, idx.numel(), size, inner, float(value),
                                                         BLOCK=BLOCK)  # fmt: skip
    return x
