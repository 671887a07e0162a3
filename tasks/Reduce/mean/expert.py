"""Expert kernel for Reduce/mean: a split fp32 sum over the middle axis of (outer, R, inner), divided by R.

One reduced dim is viewed without copying as (outer, R, inner); several are first permuted last (one
copy). Each program sums a chunk of R for BLOCK_I columns in an fp32 tile (coalesced along the contiguous
axis); long reductions are split over many programs and the partial sums reduced again by the same kernel,
whose last pass divides by the element count.
"""

import torch
import triton
import triton.language as tl

TARGET_PROGRAMS = 1024
MIN_ITERS = 4


@triton.jit
def _sum_kernel(
    x_ptr, out_ptr, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col, count,
    FINAL: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    outer = pid // n_iblocks
    cols = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    cmask = cols < n_cols
    rr = tl.arange(0, BLOCK_R)
    start = split * chunk
    acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
    for r0 in range(0, chunk, BLOCK_R):
        r = start + r0 + rr.to(tl.int64)
        m = (r[:, None] < R) & (r[:, None] < start + chunk) & cmask[None, :]
        offs = outer * s_outer + r[:, None] * s_r + cols[None, :] * s_col
        acc += tl.load(x_ptr + offs, mask=m, other=0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    if FINAL:
        total = total / count
    tl.store(out_ptr + (outer * n_split + split) * n_cols + cols, total.to(out_ptr.dtype.element_ty), mask=cmask)


def _tiles(R, n_cols, r_contiguous):
    if r_contiguous:
        block_i = min(16, triton.next_power_of_2(n_cols))
        return min(max(16, 4096 // block_i), triton.next_power_of_2(R)), block_i
    block_i = min(128, triton.next_power_of_2(n_cols))
    return max(1, min(4096 // block_i, triton.next_power_of_2(R))), block_i


def _mean_rows(x, outer, R, inner, out_dtype, count):
    """(outer * inner,) means of contiguous x viewed as (outer, R, inner)."""
    if inner == 1:  # contiguous rows: the tile's columns are the rows themselves
        n_outer, n_cols, s_outer, s_r, s_col = 1, outer, 0, 1, R
    else:
        n_outer, n_cols, s_outer, s_r, s_col = outer, inner, R * inner, inner, 1
    while True:
        block_r, block_i = _tiles(R, n_cols, s_r == 1)
        n_iblocks = triton.cdiv(n_cols, block_i)
        base = n_outer * n_iblocks
        n_split = max(1, min(triton.cdiv(TARGET_PROGRAMS, base), triton.cdiv(R, block_r * MIN_ITERS)))
        chunk = triton.cdiv(triton.cdiv(R, n_split), block_r) * block_r
        n_split = triton.cdiv(R, chunk)
        final = n_split == 1
        dst = torch.empty((n_outer, n_split, n_cols), dtype=out_dtype if final else torch.float32, device=x.device)
        _sum_kernel[(base, n_split)](
            x, dst, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col, float(count),
            FINAL=final, BLOCK_R=block_r, BLOCK_I=block_i,
        )  # fmt: skip
        if final:
            return dst.reshape(-1)
        x, R, s_outer, s_r, s_col = dst, n_split, n_split * n_cols, n_cols, 1


def mean(input_tensor, dim, keepdim=False, dtype=None):
    x = input_tensor
    out_dtype = dtype if dtype is not None else x.dtype
    if not out_dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Got: {str(out_dtype).replace('torch.', '')}")
    nd = x.dim()
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = sorted({d % max(nd, 1) for d in dims}) if dims else list(range(nd))
    kept = [d for d in range(nd) if d not in dims]
    if keepdim:
        out_shape = [1 if d in dims else x.shape[d] for d in range(nd)]
    else:
        out_shape = [x.shape[d] for d in kept]
    count = 1
    for d in dims:
        count *= x.shape[d]
    if len(dims) == 1:
        d = dims[0]
        outer = 1
        for s in x.shape[:d]:
            outer *= s
        xc = x.contiguous()
        R = x.shape[d]
        inner = xc.numel() // max(outer * R, 1)
    else:
        xc = x.permute(*kept, *dims).contiguous()
        R = count
        outer = xc.numel() // max(R, 1)
        inner = 1
    n_out = outer * inner
    if n_out == 0:
        return torch.empty(out_shape, dtype=out_dtype, device=x.device)
    if R == 0:
        return torch.full(out_shape, float("nan"), dtype=out_dtype, device=x.device)
    return _mean_rows(xc, outer, R, inner, out_dtype, count).reshape(out_shape)
