"""Expert kernels for Index/masked_select: a stream compaction in three passes. (1) each program counts the
True mask entries of its block; (2) one program turns the counts into exclusive block offsets (chunked
cumsum with a carry) and the total; (3) each program ranks its selected elements with a local cumsum and
writes them at its offset, so the output keeps row-major order."""

import torch
import triton
import triton.language as tl

BLOCK = 2048
SBLOCK = 1024


@triton.jit
def _count_kernel(m_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    m = tl.load(m_ptr + offs, mask=offs < n, other=0).to(tl.int32)
    tl.store(counts_ptr + pid, tl.sum((m != 0).to(tl.int32), axis=0))


@triton.jit
def _scan_kernel(counts_ptr, offsets_ptr, total_ptr, nblocks, SBLOCK: tl.constexpr):
    carry = tl.zeros([1], dtype=tl.int64)
    for start in range(0, nblocks, SBLOCK):
        idx = start + tl.arange(0, SBLOCK)
        mask = idx < nblocks
        c = tl.load(counts_ptr + idx, mask=mask, other=0).to(tl.int64)
        incl = tl.cumsum(c, axis=0)
        tl.store(offsets_ptr + idx, incl - c + carry, mask=mask)
        carry += tl.sum(c, axis=0)
    tl.store(total_ptr + tl.arange(0, 1), carry)


@triton.jit
def _write_kernel(x_ptr, m_ptr, offsets_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    inb = offs < n
    sel = tl.load(m_ptr + offs, mask=inb, other=0) != 0
    rank = tl.cumsum(sel.to(tl.int32), axis=0) - 1
    base = tl.load(offsets_ptr + pid)
    x = tl.load(x_ptr + offs, mask=sel)
    tl.store(out_ptr + base + rank.to(tl.int64), x, mask=sel)


def masked_select(input, mask):
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    x = input.broadcast_to(shape).contiguous()
    m = mask.broadcast_to(shape).contiguous()
    m = m.view(torch.uint8) if m.dtype == torch.bool else (m != 0).view(torch.uint8)
    n = x.numel()
    if n == 0:
        return torch.empty((0,), dtype=input.dtype, device=input.device)
    nblocks = triton.cdiv(n, BLOCK)
    counts = torch.empty(nblocks, dtype=torch.int32, device=x.device)
    offsets = torch.empty(nblocks, dtype=torch.int64, device=x.device)
    total = torch.empty(1, dtype=torch.int64, device=x.device)
    _count_kernel[(nblocks,)](m, counts, n, BLOCK=BLOCK)
    _scan_kernel[(1,)](counts, offsets, total, nblocks, SBLOCK=SBLOCK)
    out = torch.empty((int(total.item()),), dtype=input.dtype, device=x.device)
    if out.numel():
        _write_kernel[(nblocks,)](x.reshape(-1), m.reshape(-1), offsets, out, n, BLOCK=BLOCK)
    return out
