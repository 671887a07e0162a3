"""Expert kernel for Reduce/min: a split (value, index) reduction over the middle axis of (outer, R, inner).

The input is viewed without copying as (outer, R, inner) around the reduced dim. Each program reduces a
chunk of R for BLOCK_I neighbouring columns (coalesced loads along the contiguous axis), keeping a
per-lane best (value, index) and folding the lanes with built-in min reductions. Long reductions are
split over many programs and their partial (value, index) pairs reduced again by the same kernel.
Smaller value wins, NaN beats every number (torch.min propagates NaN), and equal values keep the
smaller index.
"""

import builtins

import torch
import triton
import triton.language as tl

TARGET_PROGRAMS = 1024
MIN_ITERS = 4
SENTINEL = 2**62  # index of masked-out lanes: always loses
_imin = builtins.min  # the entry below shadows the builtin


@triton.jit
def _pick(v1, i1, v2, i2):
    """The better of two (value, index) candidates: smaller value, NaN first, then smaller index."""
    n1 = v1 != v1
    n2 = v2 != v2
    lt = (v1 < v2) | (n1 & ~n2)
    tie = (v1 == v2) | (n1 & n2)
    first = (i2 == 4611686018427387904) | ((i1 != 4611686018427387904) & (lt | (tie & (i1 < i2))))
    return tl.where(first, v1, v2), tl.where(first, i1, i2)


@triton.jit
def _argbest_kernel(
    x_ptr, in_idx_ptr, val_ptr, idx_ptr, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col,
    NEG: tl.constexpr, HAS_IDX: tl.constexpr, IS_FLOAT: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    outer = pid // n_iblocks
    cols = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    cmask = cols < n_cols
    rr = tl.arange(0, BLOCK_R)
    base = outer * s_outer
    start = split * chunk
    best_v = tl.zeros((BLOCK_R, BLOCK_I), dtype=ACC)
    best_i = tl.full((BLOCK_R, BLOCK_I), 4611686018427387904, dtype=tl.int64)
    for r0 in range(0, chunk, BLOCK_R):
        r = start + r0 + rr.to(tl.int64)
        m = (r[:, None] < R) & (r[:, None] < start + chunk) & cmask[None, :]
        offs = base + r[:, None] * s_r + cols[None, :] * s_col
        v = tl.load(x_ptr + offs, mask=m, other=0).to(ACC)
        if NEG:
            v = -v
        if HAS_IDX:
            i = tl.load(in_idx_ptr + offs, mask=m, other=4611686018427387904)
        else:
            i = tl.where(m, tl.broadcast_to(r[:, None], (BLOCK_R, BLOCK_I)), 4611686018427387904)
        best_v, best_i = _pick(best_v, best_i, v, i)
    # fold the lanes with built-in reductions: NaN present -> first NaN, else first minimum
    valid = best_i != 4611686018427387904
    if IS_FLOAT:
        isn = (best_v != best_v) & valid
        any_nan = tl.max(isn.to(tl.int32), axis=0) > 0
        low = tl.min(tl.where(valid & ~isn, best_v, float("inf")), axis=0)
        cand = tl.where(any_nan[None, :], isn, valid & (best_v == low[None, :]))
        v_out = tl.where(any_nan, float("nan"), low)
    else:
        low = tl.min(tl.where(valid, best_v, 9223372036854775807), axis=0)
        cand = valid & (best_v == low[None, :])
        v_out = low
    i_out = tl.min(tl.where(cand, best_i, 4611686018427387904), axis=0)
    o = (outer * n_split + split) * n_cols + cols
    tl.store(val_ptr + o, v_out.to(val_ptr.dtype.element_ty), mask=cmask)
    tl.store(idx_ptr + o, i_out, mask=cmask)


def _tiles(R, n_cols, r_contiguous):
    """(BLOCK_R, BLOCK_I): about 4096 elements per tile, long along the contiguous axis."""
    if r_contiguous:
        block_i = _imin(16, triton.next_power_of_2(n_cols))
        return _imin(max(16, 4096 // block_i), triton.next_power_of_2(R)), block_i
    block_i = _imin(128, triton.next_power_of_2(n_cols))
    return max(1, _imin(4096 // block_i, triton.next_power_of_2(R))), block_i


def _reduce(x, idx, outer, R, inner, neg, acc_torch, acc_tl):
    """(outer * inner,) best values and indices of contiguous x viewed as (outer, R, inner)."""
    if inner == 1:  # reducing contiguous rows: the tile's columns are the rows themselves
        n_outer, n_cols, s_outer, s_r, s_col = 1, outer, 0, 1, R
    else:
        n_outer, n_cols, s_outer, s_r, s_col = outer, inner, R * inner, inner, 1
    while True:
        block_r, block_i = _tiles(R, n_cols, s_r == 1)
        n_iblocks = triton.cdiv(n_cols, block_i)
        base_programs = n_outer * n_iblocks
        n_split = max(1, _imin(triton.cdiv(TARGET_PROGRAMS, base_programs), triton.cdiv(R, block_r * MIN_ITERS)))
        chunk = triton.cdiv(triton.cdiv(R, n_split), block_r) * block_r
        n_split = triton.cdiv(R, chunk)
        vals = torch.empty((n_outer, n_split, n_cols), dtype=acc_torch, device=x.device)
        inds = torch.empty((n_outer, n_split, n_cols), dtype=torch.int64, device=x.device)
        _argbest_kernel[(base_programs, n_split)](
            x, x if idx is None else idx, vals, inds, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col,
            NEG=neg, HAS_IDX=idx is not None, IS_FLOAT=acc_torch.is_floating_point, ACC=acc_tl,
            BLOCK_R=block_r, BLOCK_I=block_i,
        )  # fmt: skip
        if n_split == 1:
            return vals.reshape(-1), inds.reshape(-1)
        # partials are (n_outer, n_split, n_cols): reduce the middle axis again
        x, idx, R, neg = vals, inds, n_split, False
        s_outer, s_r, s_col = n_split * n_cols, n_cols, 1


def min(input_tensor: torch.Tensor, dim: int, keepdim: bool = False):
    x = input_tensor
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    d = dim % x.dim()
    R = x.shape[d]
    if R == 0:
        raise IndexError("min(): Expected reduction dim to be specified for input.numel() == 0.")
    outer = 1
    for s in x.shape[:d]:
        outer *= s
    inner = x.numel() // (outer * R) if outer * R else 0
    out_shape = [1 if i == d else s for i, s in enumerate(x.shape)] if keepdim else [s for i, s in enumerate(x.shape) if i != d]
    if x.numel() == 0:
        return (torch.empty(out_shape, dtype=x.dtype, device=x.device),
                torch.empty(out_shape, dtype=torch.int64, device=x.device))  # fmt: skip
    xc = x.contiguous()
    if xc.dtype.is_floating_point:
        acc_torch, acc_tl = torch.float32, tl.float32
    else:
        xc = xc.to(torch.int64)
        acc_torch, acc_tl = torch.int64, tl.int64
    vals, inds = _reduce(xc, None, outer, R, inner, False, acc_torch, acc_tl)
    return vals.to(x.dtype).reshape(out_shape), inds.reshape(out_shape)
