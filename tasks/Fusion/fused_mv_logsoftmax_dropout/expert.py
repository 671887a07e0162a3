"""Expert kernels for Fusion/fused_mv_logsoftmax_dropout.

1. A row-blocked matrix-vector product with fp32 accumulation writes z (fp32).
2. One program streams z three times (max, sum of exp, write) to form log_softmax and applies dropout
   with Triton's counter-based tl.rand (a fresh seed per call drawn from torch's generator).
"""

import torch
import triton
import triton.language as tl

BM, BK = 32, 128
BLOCK = 2048


@triton.jit
def _mv_kernel(a_ptr, v_ptr, z_ptr, M, K, sam, sak, BM: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BK).to(tl.int64)
    acc = tl.zeros((BM, BK), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + cols
        a = tl.load(a_ptr + rows[:, None] * sam + kk[None, :] * sak,
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0).to(tl.float32)  # fmt: skip
        v = tl.load(v_ptr + kk, mask=kk < K, other=0.0).to(tl.float32)
        acc += a * v[None, :]
    tl.store(z_ptr + rows, tl.sum(acc, axis=1), mask=rows < M)


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _logsoftmax_dropout_kernel(z_ptr, y_ptr, M, p, scale, seed, DROP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mx = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, M, BLOCK):
        z = tl.load(z_ptr + start + offs, mask=start + offs < M, other=float("-inf"))
        mx = tl.maximum(mx, z)
    m = tl.max(mx, axis=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, M, BLOCK):
        z = tl.load(z_ptr + start + offs, mask=start + offs < M, other=float("-inf"))
        acc += tl.exp(z - m)
    lse = m + tl.log(tl.sum(acc, axis=0))
    for start in range(0, M, BLOCK):
        idx = start + offs
        msk = idx < M
        out = tl.load(z_ptr + idx, mask=msk, other=0.0) - lse
        if DROP:
            keep = tl.rand(seed, idx) >= p
            out = tl.where(keep, out * scale, 0.0)
        tl.store(y_ptr + idx, out.to(y_ptr.dtype.element_ty), mask=msk)


def fused_mv_logsoftmax_dropout(input, vec, p=0.5, training=True, inplace=False, dim=0, *, out=None):
    if dim not in (0, -1):
        raise IndexError(f"dim {dim} out of range for a 1-D result")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    M, K = input.shape
    vec = vec.contiguous()
    z = torch.empty(M, dtype=torch.float32, device=input.device)
    y = torch.empty(M, dtype=input.dtype, device=input.device)
    if M:
        _mv_kernel[(triton.cdiv(M, BM),)](input, vec, z, M, K, input.stride(0), input.stride(1), BM=BM, BK=BK,
                                           num_warps=4)  # fmt: skip
        drop = bool(training) and p > 0.0
        if drop and p >= 1.0:
            y.zero_()
        else:
            seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if drop else 0
            _logsoftmax_dropout_kernel[(1,)](z, y, M, float(p), 1.0 / (1.0 - p) if drop else 1.0, seed,
                                             DROP=drop, BLOCK=BLOCK, num_warps=8)  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
