"""Expert kernels for Fusion/fused_masked_select_add_gelu: stream compaction in three launches.

1. Each program counts the True entries of its mask block.
2. One program turns the block counts into exclusive offsets (chunked tl.cumsum with a carry).
3. Each program ranks its selected elements with a local tl.cumsum and writes GELU(x + alpha * other)
   to block offset + rank, so the output keeps row-major order.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048
SCAN_BLOCK = 1024


@triton.jit
def _count_kernel(m_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = tl.load(m_ptr + offs, mask=offs < n, other=0).to(tl.int32)
    tl.store(counts_ptr + tl.program_id(0), tl.sum(m, axis=0))


@triton.jit
def _scan_kernel(counts_ptr, starts_ptr, total_ptr, nblocks, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    carry = tl.zeros([1], dtype=tl.int64)
    for s in range(0, nblocks, BLOCK):
        idx = s + offs
        c = tl.load(counts_ptr + idx, mask=idx < nblocks, other=0).to(tl.int64)
        incl = tl.cumsum(c, axis=0)
        tl.store(starts_ptr + idx, carry + incl - c, mask=idx < nblocks)
        carry += tl.sum(c, axis=0)
    tl.store(total_ptr + tl.arange(0, 1), carry)


@triton.jit
def _select_gelu_kernel(x_ptr, m_ptr, starts_ptr, o_ptr, o_scalar, y_ptr, alpha, n,
                        O_MODE: tl.constexpr, TANH: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < n
    m = tl.load(m_ptr + offs, mask=inb, other=0).to(tl.int32)
    sel = (m != 0) & inb
    rank = tl.cumsum(m, axis=0) - 1
    dest = tl.load(starts_ptr + pid) + rank.to(tl.int64)
    x = tl.load(x_ptr + offs, mask=sel, other=0.0).to(tl.float32)
    if O_MODE == 0:
        o = o_scalar
    elif O_MODE == 1:
        o = tl.load(o_ptr + dest * 0, mask=sel, other=0.0).to(tl.float32)  # a single-element tensor
    else:
        o = tl.load(o_ptr + dest, mask=sel, other=0.0).to(tl.float32)
    s = x + alpha * o
    if TANH:
        inner = 0.7978845608028654 * (s + 0.044715 * s * s * s)
        t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
        y = 0.5 * s * (1.0 + t)
    else:
        y = 0.5 * s * (1.0 + tl.math.erf(s * 0.7071067811865476))
    tl.store(y_ptr + dest, y.to(y_ptr.dtype.element_ty), mask=sel)


def fused_masked_select_add_gelu(input, mask, other, *, alpha=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    if mask.shape != input.shape:
        input, mask = torch.broadcast_tensors(input, mask)
    x = input.contiguous()
    m = mask.contiguous().view(torch.uint8)
    n = x.numel()
    nblocks = triton.cdiv(n, BLOCK)
    counts = torch.empty(max(nblocks, 1), dtype=torch.int32, device=x.device)
    starts = torch.empty(max(nblocks, 1), dtype=torch.int64, device=x.device)
    total = torch.zeros(1, dtype=torch.int64, device=x.device)
    if nblocks:
        _count_kernel[(nblocks,)](m, counts, n, BLOCK=BLOCK, num_warps=8)
        _scan_kernel[(1,)](counts, starts, total, nblocks, BLOCK=SCAN_BLOCK, num_warps=4)
    count = int(total.item())  # the output length is data-dependent: one host sync
    y = torch.empty(count, dtype=x.dtype, device=x.device)
    if isinstance(other, torch.Tensor):
        o_mode = 1 if other.numel() == 1 else 2
        o = other.reshape(-1) if o_mode == 1 else other.expand(count).contiguous()
        o_scalar = 0.0
    else:
        o_mode, o, o_scalar = 0, x, float(other)
    if count:
        _select_gelu_kernel[(nblocks,)](x, m, starts, o, o_scalar, y, float(alpha), n, O_MODE=o_mode,
                                         TANH=approximate == "tanh", BLOCK=BLOCK, num_warps=8)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
