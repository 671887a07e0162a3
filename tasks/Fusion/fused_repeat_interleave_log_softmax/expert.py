"""Expert kernels for Fusion/fused_repeat_interleave_log_softmax, without materializing the repeat first.

Along the softmax dim each value x_j appears r_j times, so per fiber logsumexp = max + log(sum_j r_j *
exp(x_j - max)). Stage 1 computes a (max, weighted sum) per chunk of each fiber, stage 2 merges the
chunks into one logsumexp per fiber, stage 3 writes out[t] = x[j(t)] - lse, where j(t) is t // repeats or a
binary search in the cumulative per-slice counts. fp32 math, fp64 when dtype=torch.float64.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
ITERS = 8  # a stage-1 program covers BLOCK * ITERS elements of one fiber
OUT_BLOCK = 2048


@triton.jit
def _chunk_kernel(x_ptr, rep_ptr, pmax_ptr, psum_ptr, L, inner, n_chunks, rep_const, PER_ELEM: tl.constexpr,
                  FP64: tl.constexpr, BLOCK: tl.constexpr, ITERS: tl.constexpr):  # fmt: skip
    f = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1).to(tl.int64)
    acc_t = tl.float64 if FP64 else tl.float32
    base = (f // inner) * L * inner + (f % inner)
    m = tl.full([BLOCK], float("-inf"), acc_t)
    s = tl.zeros([BLOCK], acc_t)
    for it in range(ITERS):
        j = (c * ITERS + it) * BLOCK + tl.arange(0, BLOCK)
        ok = j < L
        x = tl.load(x_ptr + base + j * inner, mask=ok, other=float("-inf")).to(acc_t)
        if PER_ELEM:
            w = tl.load(rep_ptr + j, mask=ok, other=0).to(acc_t)
        else:
            w = tl.where(ok, rep_const, 0).to(acc_t)
        x = tl.where(w > 0, x, float("-inf"))  # zero repeats drop the slice
        m_new = tl.maximum(m, x)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(x == float("-inf"), 0.0, w * tl.exp(x - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    tot = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mx)), axis=0)
    tl.store(pmax_ptr + f * n_chunks + c, mx)
    tl.store(psum_ptr + f * n_chunks + c, tot)


@triton.jit
def _merge_kernel(pmax_ptr, psum_ptr, lse_ptr, n_chunks, FP64: tl.constexpr, BLOCK: tl.constexpr):
    f = tl.program_id(0).to(tl.int64)
    acc_t = tl.float64 if FP64 else tl.float32
    m = tl.full([BLOCK], float("-inf"), acc_t)
    s = tl.zeros([BLOCK], acc_t)
    for start in range(0, n_chunks, BLOCK):
        c = start + tl.arange(0, BLOCK)
        ok = c < n_chunks
        pm = tl.load(pmax_ptr + f * n_chunks + c, mask=ok, other=float("-inf"))
        ps = tl.load(psum_ptr + f * n_chunks + c, mask=ok, other=0.0)
        m_new = tl.maximum(m, pm)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(pm == float("-inf"), 0.0, ps * tl.exp(pm - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    tot = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mx)), axis=0)
    tl.store(lse_ptr + f, mx + tl.log(tot))


@triton.jit
def _write_kernel(x_ptr, cum_ptr, lse_ptr, y_ptr, n_out, L, T, inner, rep_const, PER_ELEM: tl.constexpr,
                  SEARCH_STEPS: tl.constexpr, FP64: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_out
    acc_t = tl.float64 if FP64 else tl.float32
    i = offs % inner
    t = (offs // inner) % T
    o = offs // (inner * T)
    if PER_ELEM:
        # j = number of slices whose cumulative end is <= t  (cum[j] = r_0 + ... + r_j)
        lo = tl.zeros([BLOCK], tl.int64)
        hi = tl.zeros([BLOCK], tl.int64) + L
        for _ in range(SEARCH_STEPS):
            mid = (lo + hi) // 2
            end = tl.load(cum_ptr + mid, mask=ok & (mid < L), other=0)
            go_right = end <= t
            lo = tl.where(go_right & (lo < hi), mid + 1, lo)
            hi = tl.where(go_right | (lo >= hi), hi, mid)
        j = lo
    else:
        j = t // rep_const
    x = tl.load(x_ptr + (o * L + j) * inner + i, mask=ok, other=0.0).to(acc_t)
    lse = tl.load(lse_ptr + o * inner + i, mask=ok, other=0.0)
    tl.store(y_ptr + offs, (x - lse).to(y_ptr.dtype.element_ty), mask=ok)


def fused_repeat_interleave_log_softmax(input, repeats, dim=None, *, output_size=None, dtype=None, out=None):
    x = input.contiguous()
    if dim is None:
        x = x.reshape(-1)
        d = 0
    else:
        d = dim % max(x.dim(), 1)
    shape = list(x.shape)
    L = shape[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = x.numel() // max(outer * L, 1)
    per_elem = isinstance(repeats, torch.Tensor) and repeats.numel() > 1
    if per_elem:
        reps = repeats.to(device=x.device, dtype=torch.int64).contiguous()
        cum = torch.cumsum(reps, 0)  # slice boundaries (index bookkeeping)
        T = int(cum[-1]) if L else 0
        rep_const = 1
    else:
        rep_const = int(repeats.item() if isinstance(repeats, torch.Tensor) else repeats)
        reps = cum = torch.zeros(1, dtype=torch.int64, device=x.device)
        T = L * rep_const
    out_dtype = dtype if dtype is not None else x.dtype
    fp64 = out_dtype == torch.float64
    shape[d] = T
    y = torch.empty(shape, dtype=out_dtype, device=x.device)
    n_fibers = outer * inner
    if y.numel() == 0:
        return y
    acc_dtype = torch.float64 if fp64 else torch.float32
    block = min(BLOCK, triton.next_power_of_2(L))
    iters = min(ITERS, triton.cdiv(L, block))
    n_chunks = triton.cdiv(L, block * iters)
    pmax = torch.empty(n_fibers * n_chunks, dtype=acc_dtype, device=x.device)
    psum = torch.empty_like(pmax)
    lse = torch.empty(n_fibers, dtype=acc_dtype, device=x.device)
    _chunk_kernel[(n_fibers, n_chunks)](x, reps, pmax, psum, L, inner, n_chunks, rep_const, PER_ELEM=per_elem,
                                        FP64=fp64, BLOCK=block, ITERS=iters, num_warps=8)  # fmt: skip
    _merge_kernel[(n_fibers,)](pmax, psum, lse, n_chunks, FP64=fp64, BLOCK=min(256, triton.next_power_of_2(n_chunks)),
                               num_warps=4)  # fmt: skip
    n_out = y.numel()
    steps = max(1, int(L).bit_length() + 1)
    _write_kernel[(triton.cdiv(n_out, OUT_BLOCK),)](x, cum, lse, y, n_out, L, T, inner, rep_const,
                                                    PER_ELEM=per_elem, SEARCH_STEPS=steps, FP64=fp64,
                                                    BLOCK=OUT_BLOCK, num_warps=8)  # fmt: skip
    return y
