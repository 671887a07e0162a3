"""Expert kernel for Reduce/std: two-pass (mean, then centered sum of squares) split reductions in fp32.

The reduced dim is viewed without copying as the middle axis of (outer, R, inner) (all elements: (1, N, 1)).
Pass 1 sums each output's elements and divides by N; pass 2 re-reads them, subtracts that mean and sums the
squares, then divides by N - correction and takes an IEEE square root. Each pass is a split reduction: many
programs sum chunks in fp32 tiles (coalesced along the contiguous axis) and the same kernel reduces the
partial sums, its last pass applying the division (and square root).
"""

import torch
import triton
import triton.language as tl

TARGET_PROGRAMS = 1024
MIN_ITERS = 4


@triton.jit
def _sum_kernel(
    x_ptr, mean_ptr, out_ptr, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col, divisor,
    CENTER: tl.constexpr, FINAL: tl.constexpr, SQRT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    outer = pid // n_iblocks
    cols = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    cmask = cols < n_cols
    rr = tl.arange(0, BLOCK_R)
    start = split * chunk
    if CENTER:
        mu = tl.load(mean_ptr + outer * n_cols + cols, mask=cmask, other=0.0)
    acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
    for r0 in range(0, chunk, BLOCK_R):
        r = start + r0 + rr.to(tl.int64)
        m = (r[:, None] < R) & (r[:, None] < start + chunk) & cmask[None, :]
        offs = outer * s_outer + r[:, None] * s_r + cols[None, :] * s_col
        v = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
        if CENTER:
            d = tl.where(m, v - mu[None, :], 0.0)
            acc += d * d
        else:
            acc += v
    total = tl.sum(acc, axis=0)
    if FINAL:
        total = total / divisor
        if SQRT:
            total = tl.sqrt_rn(total)
    tl.store(out_ptr + (outer * n_split + split) * n_cols + cols, total, mask=cmask)


def _tiles(R, n_cols, r_contiguous):
    if r_contiguous:
        block_i = min(16, triton.next_power_of_2(n_cols))
        return min(max(16, 4096 // block_i), triton.next_power_of_2(R)), block_i
    block_i = min(128, triton.next_power_of_2(n_cols))
    return max(1, min(4096 // block_i, triton.next_power_of_2(R))), block_i


def _reduce(x, mean, outer, R, inner, divisor, sqrt):
    """(outer * inner,) fp32 sums (centered squares when `mean` is given) of x as (outer, R, inner), / divisor."""
    if inner == 1:  # contiguous rows: the tile's columns are the rows themselves
        n_outer, n_cols, s_outer, s_r, s_col = 1, outer, 0, 1, R
    else:
        n_outer, n_cols, s_outer, s_r, s_col = outer, inner, R * inner, inner, 1
    center = mean is not None
    while True:
        block_r, block_i = _tiles(R, n_cols, s_r == 1)
        n_iblocks = triton.cdiv(n_cols, block_i)
        base = n_outer * n_iblocks
        n_split = max(1, min(triton.cdiv(TARGET_PROGRAMS, base), triton.cdiv(R, block_r * MIN_ITERS)))
        chunk = triton.cdiv(triton.cdiv(R, n_split), block_r) * block_r
        n_split = triton.cdiv(R, chunk)
        final = n_split == 1
        dst = torch.empty((n_outer, n_split, n_cols), dtype=torch.float32, device=x.device)
        _sum_kernel[(base, n_split)](
            x, mean if center else x, dst, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col, float(divisor),
            CENTER=center, FINAL=final, SQRT=sqrt, BLOCK_R=block_r, BLOCK_I=block_i,
        )  # fmt: skip
        if final:
            return dst.reshape(-1)
        x, R, s_outer, s_r, s_col, center = dst, n_split, n_split * n_cols, n_cols, 1, False


def std(input, dim=None, correction=1, keepdim=False):
    x = input
    nd = x.dim()
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = sorted({d % max(nd, 1) for d in dims}) if dims else list(range(nd))
    kept = [d for d in range(nd) if d not in dims]
    out_shape = [1 if d in dims else x.shape[d] for d in range(nd)] if keepdim else [x.shape[d] for d in kept]
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
    if outer * inner == 0:
        return torch.empty(out_shape, dtype=x.dtype, device=x.device)
    mu = _reduce(xc, None, outer, R, inner, count, False)
    var_div = max(count - correction, 0)
    out = _reduce(xc, mu, outer, R, inner, var_div, True)
    return out.to(x.dtype).reshape(out_shape)
