"""Expert kernel for Fusion/fused_gather_masked_fill: gather and fill in one pass over the output.

Each output element (coordinates from index's shape, up to 4 dims) reads its index, reads input at
those coordinates with the `dim` coordinate replaced, and stores `value` instead where the broadcast
mask (read through its own strides, zero for broadcast dims) is True. Works for any input dtype.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048
MAX_DIMS = 4


@triton.jit
def _gather_fill_kernel(x_ptr, idx_ptr, m_ptr, y_ptr, n, value,
                        s1, s2, s3,  # index/output sizes (dim 0 implied)
                        xs0, xs1, xs2, xs3,  # input strides, with the gather dim's stride zeroed
                        ms0, ms1, ms2, ms3,  # mask strides after broadcasting
                        gstride,  # input stride of the gather dim
                        BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    r = offs
    c3 = r % s3
    r = r // s3
    c2 = r % s2
    r = r // s2
    c1 = r % s1
    c0 = r // s1
    j = tl.load(idx_ptr + offs, mask=ok, other=0).to(tl.int64)
    src = c0 * xs0 + c1 * xs1 + c2 * xs2 + c3 * xs3 + j * gstride
    g = tl.load(x_ptr + src, mask=ok)
    fill = tl.load(m_ptr + (c0 * ms0 + c1 * ms1 + c2 * ms2 + c3 * ms3), mask=ok, other=0) != 0
    y = tl.where(fill, value, g)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=ok)


def fused_gather_masked_fill(input, dim, index, mask, value, *, sparse_grad=False, out=None) -> torch.Tensor:
    nd = max(index.dim(), 1)
    if nd > MAX_DIMS:
        raise NotImplementedError(f"expert supports up to {MAX_DIMS} dims")
    d = dim % nd
    idx = index.contiguous().reshape(index.shape if index.dim() else (1,))
    x = input.reshape(idx.shape if input.dim() == 0 else input.shape)
    m = mask.expand(idx.shape)
    pad = MAX_DIMS - nd
    sizes = [1] * pad + list(idx.shape)
    xstr = list(x.stride())
    gstride = xstr[d]
    xstr[d] = 0
    xstr = [0] * pad + xstr
    mstr = [0] * pad + list(m.stride())
    value = torch.tensor(value).to(input.dtype).item()  # e.g. -1.0 becomes -1 for integer input
    y = torch.empty(idx.shape, dtype=input.dtype, device=input.device)
    n = y.numel()
    if n:
        _gather_fill_kernel[(triton.cdiv(n, BLOCK),)](x, idx, m, y, n, value, *sizes[1:], *xstr, *mstr, gstride,
                                                      BLOCK=BLOCK, num_warps=4)  # fmt: skip
    y = y.reshape(index.shape)
    if out is not None:
        out.copy_(y)
        return out
    return y
