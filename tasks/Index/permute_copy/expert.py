"""Expert kernel for Index/permute_copy: a tiled copy through 2-D tiles [input's innermost axis x output's
innermost axis], so both the loads and the stores are coalesced; the two remaining output axes and the tile
indices share one flat program grid. Up to 4 dims (smaller inputs are padded with size-1 axes)."""

import torch
import triton
import triton.language as tl

TILE = 32


@triton.jit
def _permute_kernel(x_ptr, out_ptr, size_b, size_i, size_j,
                    s_a, s_b, s_i, s_j, o_a, o_b, o_i,
                    TILE_I: tl.constexpr, TILE_J: tl.constexpr):  # fmt: skip
    # out[a, b, i, j] (axis j is the output's last axis, stride 1) = x at a*s_a + b*s_b + i*s_i + j*s_j
    # one flat grid (no 65535 limit): program -> (a, b, i tile, j tile), j tiles fastest
    pid = tl.program_id(0).to(tl.int64)
    n_tj = tl.cdiv(size_j, TILE_J)
    n_ti = tl.cdiv(size_i, TILE_I)
    tj = pid % n_tj
    t = pid // n_tj
    ti = t % n_ti
    pid_ab = t // n_ti
    a = pid_ab // size_b
    b = pid_ab - a * size_b
    i = ti * TILE_I + tl.arange(0, TILE_I).to(tl.int64)
    j = tj * TILE_J + tl.arange(0, TILE_J).to(tl.int64)
    mask = (i < size_i)[:, None] & (j < size_j)[None, :]
    src = a * s_a + b * s_b + i[:, None] * s_i + j[None, :] * s_j
    vals = tl.load(x_ptr + src, mask=mask)
    dst = a * o_a + b * o_b + i[:, None] * o_i + j[None, :]
    tl.store(out_ptr + dst, vals, mask=mask)


def permute_copy(input, dims):
    nd = input.dim()
    dims = [d % nd for d in dims] if nd else []
    out_shape = [input.shape[d] for d in dims]
    out = torch.empty(out_shape, dtype=input.dtype, device=input.device)
    if out.numel() == 0:
        return out
    if nd > 4:
        raise ValueError("permute_copy expert handles up to 4 dims")
    shape = [1] * (4 - nd) + out_shape
    in_strides = [0] * (4 - nd) + [input.stride(d) for d in dims]
    out_strides = [0] * 4
    acc = 1
    for ax in range(3, -1, -1):
        out_strides[ax] = acc
        acc *= shape[ax]
    # tile axis i: the output axis that is the input's fastest (stride 1, size > 1), unless that is axis 3
    cands = [ax for ax in range(3) if in_strides[ax] == 1 and shape[ax] > 1]
    i_ax = cands[0] if cands else 2
    a_ax, b_ax = [ax for ax in range(3) if ax != i_ax]
    grid = (shape[a_ax] * shape[b_ax] * triton.cdiv(shape[i_ax], TILE) * triton.cdiv(shape[3], TILE),)
    _permute_kernel[grid](input, out, shape[b_ax], shape[i_ax], shape[3],
                          in_strides[a_ax], in_strides[b_ax], in_strides[i_ax], in_strides[3],
                          out_strides[a_ax], out_strides[b_ax], out_strides[i_ax],
                          TILE_I=TILE, TILE_J=TILE)  # fmt: skip
    return out
