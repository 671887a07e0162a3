"""Expert kernel for Reduce/sum: reduced dims moved last, then a split row reduction.

Each program sums one chunk of one row in a BLOCK-wide accumulator (fp32, fp64 or int64) and
writes a partial; the partials are reduced again by the same kernel until one value per row is
left. Long 1-D inputs thus use ~1024 programs in the first pass and one in the second.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
TARGET_PROGRAMS = 1024  # enough CTAs to fill a large GPU several times over
MIN_ITERS = 4  # at least this many BLOCK loads per program before splitting a row further


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, L, chunk, n_split, ACC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    start = split * chunk
    base = x_ptr + row * L
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=ACC)
    for off in range(0, chunk, BLOCK):
        idx = start + off + cols
        acc += tl.load(base + idx, mask=idx < L, other=0).to(ACC)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row * n_split + split, total.to(out_ptr.dtype.element_ty))


def _acc_dtype(out_dtype):
    if out_dtype == torch.float64:
        return torch.float64, tl.float64
    if out_dtype.is_floating_point:
        return torch.float32, tl.float32
    return torch.int64, tl.int64


def sum(input, dim, keepdim=False, dtype=None):
    nd = input.dim()
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = sorted({d % max(nd, 1) for d in dims}) if dims else list(range(nd))
    if dtype is not None:
        out_dtype = dtype
    elif input.dtype.is_floating_point:
        out_dtype = input.dtype
    else:
        out_dtype = torch.int64  # ints and bools sum to int64, as torch.sum
    acc_torch, acc_tl = _acc_dtype(out_dtype)

    kept = [d for d in range(nd) if d not in dims]
    kept_shape = [input.shape[d] for d in kept]
    x = input
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    x = x.permute(*kept, *dims).contiguous()
    R = 1
    for s in kept_shape:
        R *= s
    L = x.numel() // R if R else 0
    out = torch.empty(R, dtype=out_dtype, device=input.device)
    if R:
        src, length = x, L
        while True:
            n_split = max(1, min(triton.cdiv(length, BLOCK * MIN_ITERS), triton.cdiv(TARGET_PROGRAMS, R)))
            chunk = triton.cdiv(triton.cdiv(max(length, 1), n_split), BLOCK) * BLOCK
            n_split = triton.cdiv(max(length, 1), chunk)
            dst = out if n_split == 1 else torch.empty((R, n_split), dtype=acc_torch, device=input.device)
            _row_sum_kernel[(R, n_split)](src, dst, length, chunk, n_split, ACC=acc_tl, BLOCK=BLOCK)
            if n_split == 1:
                break
            src, length = dst, n_split
    if keepdim:
        shape = [1 if d in dims else input.shape[d] for d in range(nd)]
    else:
        shape = kept_shape
    return out.reshape(shape)
