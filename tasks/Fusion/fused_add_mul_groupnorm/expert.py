"""Expert kernels for Fusion/fused_add_mul_groupnorm.

m = (input1 + input2) * input2 is recomputed on the fly and never stored. A stats kernel (one program per
(sample, group), whose channels are contiguous in memory) runs Welford's update per lane and merges the
lanes with the parallel-axis rule, giving the group mean and 1 / sqrt(var + eps). A flat apply kernel then
normalizes, applies the per-channel affine and stores once. fp32 math.
"""

import torch
import triton
import triton.language as tl

STATS_BLOCK = 1024
BLOCK = 2048


@triton.jit
def _group_stats_kernel(x1_ptr, x2_ptr, mean_ptr, rstd_ptr, group_size, eps, BLOCK: tl.constexpr):
    gid = tl.program_id(0).to(tl.int64)  # (sample, group) index; its elements are contiguous
    base = gid * group_size
    cnt = tl.zeros([BLOCK], tl.float32)
    mean = tl.zeros([BLOCK], tl.float32)
    m2 = tl.zeros([BLOCK], tl.float32)
    for s in range(0, group_size, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        msk = offs < group_size
        a = tl.load(x1_ptr + base + offs, mask=msk, other=0.0).to(tl.float32)
        b = tl.load(x2_ptr + base + offs, mask=msk, other=0.0).to(tl.float32)
        v = (a + b) * b
        cnt_new = cnt + tl.where(msk, 1.0, 0.0)
        delta = v - mean
        mean = tl.where(msk, mean + delta / tl.maximum(cnt_new, 1.0), mean)
        m2 = tl.where(msk, m2 + delta * (v - mean), m2)
        cnt = cnt_new
    total = tl.sum(cnt, axis=0)
    mu = tl.sum(cnt * mean, axis=0) / total
    d = mean - mu
    var = tl.sum(m2 + cnt * d * d, axis=0) / total
    tl.store(mean_ptr + gid, mu)
    tl.store(rstd_ptr + gid, 1.0 / tl.sqrt(var + eps))


@triton.jit
def _apply_kernel(x1_ptr, x2_ptr, y_ptr, mean_ptr, rstd_ptr, w_ptr, b_ptr, n, C, HW, group_size,
                  HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    msk = offs < n
    a = tl.load(x1_ptr + offs, mask=msk, other=0.0).to(tl.float32)
    b = tl.load(x2_ptr + offs, mask=msk, other=0.0).to(tl.float32)
    g = offs // group_size
    c = (offs // HW) % C
    mu = tl.load(mean_ptr + g, mask=msk, other=0.0)
    rstd = tl.load(rstd_ptr + g, mask=msk, other=1.0)
    y = ((a + b) * b - mu) * rstd
    if HAS_W:
        y = y * tl.load(w_ptr + c, mask=msk, other=1.0).to(tl.float32)
    if HAS_B:
        y = y + tl.load(b_ptr + c, mask=msk, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=msk)


def fused_add_mul_groupnorm(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None) -> torch.Tensor:
    x1 = input1.contiguous()
    x2 = input2.expand(x1.shape).contiguous() if input2.shape != x1.shape else input2.contiguous()
    n_s, c = x1.shape[0], x1.shape[1]
    if c % num_groups:
        raise ValueError(f"channels ({c}) must be divisible by num_groups ({num_groups})")
    total = x1.numel()
    hw = total // (n_s * c) if n_s * c else 0
    group_size = (c // num_groups) * hw
    y = torch.empty_like(x1)
    n_groups = n_s * num_groups
    if total:
        mean = torch.empty(n_groups, dtype=torch.float32, device=x1.device)
        rstd = torch.empty(n_groups, dtype=torch.float32, device=x1.device)
        block = min(STATS_BLOCK, triton.next_power_of_2(max(group_size, 1)))
        _group_stats_kernel[(n_groups,)](x1, x2, mean, rstd, group_size, float(eps), BLOCK=block, num_warps=8)
        w = weight if weight is not None else mean  # unused placeholders when absent
        b = bias if bias is not None else mean
        _apply_kernel[(triton.cdiv(total, BLOCK),)](x1, x2, y, mean, rstd, w, b, total, c, hw, group_size,
                                                    HAS_W=weight is not None, HAS_B=bias is not None, BLOCK=BLOCK,
                                                    num_warps=8)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
