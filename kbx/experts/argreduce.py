"""The split (value, index) reduction over the middle axis of (outer, R, inner) that the expert solutions of
`Reduce/argmax`, `Reduce/min` and `Reduce/min_gelu` share (each expert imports it).

The input is viewed without copying as (outer, R, inner) around the reduced dim. Each program reduces a
chunk of R for BLOCK_I neighbouring columns (coalesced loads along the contiguous axis), keeping a
per-lane best (value, index) and folding the lanes with built-in min reductions. Long reductions are
split over many programs and their partial (value, index) pairs reduced again by the same kernel.
Smaller value wins, NaN beats every number (as torch.min), and equal values keep the smaller index; a
maximum is the minimum of the negated values (`neg`), negated on load. min_gelu's transform
(approximate='none': x * erf(x / sqrt(2)) / 2, upstream's form without "1 +"; 'tanh': the tanh GELU, with
tanh(z) = 2 * sigmoid(2z) - 1) is applied in fp32 right after each load.
"""

import torch
import triton
import triton.language as tl

TARGET_PROGRAMS = 1024
MIN_ITERS = 4
SENTINEL = 2**62  # index of masked-out lanes: always loses (the kernels spell it out: 4611686018427387904)
NO_TRANSFORM, GELU_ERF, GELU_TANH = 0, 1, 2  # applied to each value as it is loaded (Reduce/min_gelu)


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
def argbest_kernel(
    x_ptr, in_idx_ptr, val_ptr, idx_ptr, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col,
    NEG: tl.constexpr, MODE: tl.constexpr, HAS_IDX: tl.constexpr, IS_FLOAT: tl.constexpr, ACC: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
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
        if MODE == 1:  # GELU_ERF
            v = v * tl.math.erf(v * 0.7071067811865476) * 0.5
        if MODE == 2:  # GELU_TANH
            z = 0.7978845608028654 * (v + 0.044715 * v * v * v)
            v = 0.5 * v * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0))
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
        block_i = min(16, triton.next_power_of_2(n_cols))
        return min(max(16, 4096 // block_i), triton.next_power_of_2(R)), block_i
    block_i = min(128, triton.next_power_of_2(n_cols))
    return max(1, min(4096 // block_i, triton.next_power_of_2(R))), block_i


def reduce_best(x, idx, outer, R, inner, neg, acc_torch, acc_tl, mode=NO_TRANSFORM):
    """(outer * inner,) best values and indices of contiguous x viewed as (outer, R, inner): the smallest
    (of -x where `neg`; of the GELU of x for the GELU modes), NaN first, ties to the smaller index. `idx`
    gives the candidates' indices (None: their position along R)."""
    if inner == 1:  # reducing contiguous rows: the tile's columns are the rows themselves
        n_outer, n_cols, s_outer, s_r, s_col = 1, outer, 0, 1, R
    else:
        n_outer, n_cols, s_outer, s_r, s_col = outer, inner, R * inner, inner, 1
    while True:
        block_r, block_i = _tiles(R, n_cols, s_r == 1)
        n_iblocks = triton.cdiv(n_cols, block_i)
        base_programs = n_outer * n_iblocks
        n_split = max(1, min(triton.cdiv(TARGET_PROGRAMS, base_programs), triton.cdiv(R, block_r * MIN_ITERS)))
        chunk = triton.cdiv(triton.cdiv(R, n_split), block_r) * block_r
        n_split = triton.cdiv(R, chunk)
        vals = torch.empty((n_outer, n_split, n_cols), dtype=acc_torch, device=x.device)
        inds = torch.empty((n_outer, n_split, n_cols), dtype=torch.int64, device=x.device)
        argbest_kernel[(base_programs, n_split)](
            x, x if idx is None else idx, vals, inds, R, n_cols, n_iblocks, chunk, n_split, s_outer, s_r, s_col,
            NEG=neg, MODE=mode, HAS_IDX=idx is not None, IS_FLOAT=acc_torch.is_floating_point, ACC=acc_tl,
            BLOCK_R=block_r, BLOCK_I=block_i,
        )  # fmt: skip
        if n_split == 1:
            return vals.reshape(-1), inds.reshape(-1)
        # partials are (n_outer, n_split, n_cols): reduce the middle axis again
        x, idx, R, neg, mode = vals, inds, n_split, False, NO_TRANSFORM
        s_outer, s_r, s_col = n_split * n_cols, n_cols, 1


def accumulated(x: torch.Tensor) -> tuple[torch.Tensor, torch.dtype, object]:
    """(x as the kernel reads it, its torch and Triton accumulator types): floats compare in fp32,
    integers (and bools) in int64."""
    if x.dtype.is_floating_point:
        return x, torch.float32, tl.float32
    return x.to(torch.int64), torch.int64, tl.int64
