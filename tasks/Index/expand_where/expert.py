"""Expert kernel for Index/expand_where: one pass over the output; the broadcast input, condition and
`other` are read through their (possibly zero) strides, so nothing is materialised."""

import torch
import triton
import triton.language as tl

BLOCK_R = 16
BLOCK_C = 1024


@triton.jit
def _expand_where_kernel(x_ptr, c_ptr, o_ptr, out_ptr, R, N, xs0, xs1, cs0, cs1, os0, os1,
                         BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < N)[None, :]
    cond = tl.load(c_ptr + rows[:, None] * cs0 + cols[None, :] * cs1, mask=mask, other=0) != 0
    x = tl.load(x_ptr + rows[:, None] * xs0 + cols[None, :] * xs1, mask=mask & cond)
    other = tl.load(o_ptr + rows[:, None] * os0 + cols[None, :] * os1, mask=mask & ~cond)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.where(cond, x, other), mask=mask)


def expand_where(input, target_sizes, cond, other):
    x = input.expand(*target_sizes)
    shape = torch.broadcast_shapes(x.shape, cond.shape, other.shape)
    x, c, o = (t.broadcast_to(shape) for t in (x, cond, other))
    dtype = torch.promote_types(input.dtype, other.dtype)
    out = torch.empty(shape, dtype=dtype, device=input.device)
    if out.numel() == 0:
        return out
    # view everything as (rows, last dim); leading dims must collapse into one stride per tensor
    n = shape[-1] if len(shape) else 1
    r = out.numel() // n
    views = []
    for t in (x, c.view(torch.uint8) if c.dtype == torch.bool else c, o):
        v = t.reshape(r, n) if t.dim() != 2 else t  # reshape keeps zero strides when it can
        views.append(v)
    xv, cv, ov = views
    grid = (triton.cdiv(r, BLOCK_R), triton.cdiv(n, BLOCK_C))
    _expand_where_kernel[grid](xv, cv, ov, out, r, n, xv.stride(0), xv.stride(1), cv.stride(0), cv.stride(1),
                               ov.stride(0), ov.stride(1), BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=8)  # fmt: skip
    return out
