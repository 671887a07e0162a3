"""Expert kernel for Math/ifftshift: each output element reads in[(i_d + n_d // 2) % n_d] per shifted dim.

The tensor is viewed as contiguous with up to 6 dims (padded with leading size-1 dims); one pass,
coalesced writes, gathered reads. Works for any dtype (pure data movement).
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048
MAX_DIMS = 6


@triton.jit
def _ifftshift_kernel(x_ptr, y_ptr, n, s1, s2, s3, s4, s5, k0, k1, k2, k3, k4, k5, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # decompose the output's flat index into coordinates (dim 5 fastest) and shift each one
    r = offs
    c5 = r % s5
    r = r // s5
    c4 = r % s4
    r = r // s4
    c3 = r % s3
    r = r // s3
    c2 = r % s2
    r = r // s2
    c1 = r % s1
    c0 = r // s1
    s0 = n // (s1 * s2 * s3 * s4 * s5)
    c0 = (c0 + k0) % s0
    c1 = (c1 + k1) % s1
    c2 = (c2 + k2) % s2
    c3 = (c3 + k3) % s3
    c4 = (c4 + k4) % s4
    c5 = (c5 + k5) % s5
    src = ((((c0 * s1 + c1) * s2 + c2) * s3 + c3) * s4 + c4) * s5 + c5
    v = tl.load(x_ptr + src, mask=mask)
    tl.store(y_ptr + offs, v, mask=mask)


def ifftshift(input: torch.Tensor, dim: int | tuple[int, ...] | None = None) -> torch.Tensor:
    x = input.contiguous()
    nd = x.dim()
    if dim is None:
        dims = set(range(nd))
    elif isinstance(dim, int):
        dims = {dim % nd}
    else:
        dims = {d % nd for d in dim}
    sizes = list(x.shape)
    shifts = [s // 2 if i in dims else 0 for i, s in enumerate(sizes)]
    # merge runs of adjacent unshifted dims so any rank fits in MAX_DIMS slots where possible
    merged_s, merged_k = [], []
    for s, k in zip(sizes, shifts):
        if merged_s and k == 0 and merged_k[-1] == 0:
            merged_s[-1] *= s
        else:
            merged_s.append(s)
            merged_k.append(k)
    if len(merged_s) > MAX_DIMS:
        raise NotImplementedError(f"ifftshift expert supports up to {MAX_DIMS} shifted/merged dims")
    pad = MAX_DIMS - len(merged_s)
    merged_s = [1] * pad + merged_s
    merged_k = [0] * pad + merged_k
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _ifftshift_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, *merged_s[1:], *merged_k, BLOCK=BLOCK, num_warps=4)
    return y
