"""Expert kernel for Index/scatter: a vectorised copy of input into the output, then one program per block
of index positions: each decomposes its position into coordinates (up to 4-D), swaps the scatter dim's
coordinate for the index value, and writes the matching src element."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _scatter_kernel(out_ptr, idx_ptr, src_ptr, total, size_dim,
                    n1, n2, n3,  # index shape (dims 1..3; dim 0 is implied)
                    is0, is1, is2, is3, ss0, ss1, ss2, ss3, os0, os1, os2, os3,
                    DIM: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < total
    c3 = offs % n3
    t = offs // n3
    c2 = t % n2
    t = t // n2
    c1 = t % n1
    c0 = t // n1
    idx = tl.load(idx_ptr + c0 * is0 + c1 * is1 + c2 * is2 + c3 * is3, mask=mask, other=0).to(tl.int64)
    idx = tl.where(idx < 0, idx + size_dim, idx)
    val = tl.load(src_ptr + c0 * ss0 + c1 * ss1 + c2 * ss2 + c3 * ss3, mask=mask)
    if DIM == 0:
        c0 = idx
    elif DIM == 1:
        c1 = idx
    elif DIM == 2:
        c2 = idx
    else:
        c3 = idx
    tl.store(out_ptr + c0 * os0 + c1 * os1 + c2 * os2 + c3 * os3, val, mask=mask)


def scatter(input, dim, index, src):
    nd = input.dim()
    if nd > 4:
        raise ValueError("scatter expert handles up to 4 dims")
    dim = dim % max(nd, 1)
    x = input.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        _copy_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    total = index.numel()
    if total == 0:
        return out
    pad = 4 - nd
    ishape = [1] * pad + list(index.shape)
    istr = [0] * pad + list(index.stride())
    sstr = [0] * pad + list(src.stride())
    ostr = [0] * pad + list(out.stride())
    _scatter_kernel[(triton.cdiv(total, BLOCK),)](out, index, src, total, x.shape[dim], ishape[1], ishape[2], ishape[3],
                                                  *istr, *sstr, *ostr, DIM=dim + pad, BLOCK=BLOCK)  # fmt: skip
    return out
