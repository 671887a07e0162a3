"""Expert kernel for Fusion/fused_mv_sigmoid_sub: a row-blocked matrix-vector product in fp32 FMA (no TF32),
with sigmoid and the subtraction applied in the epilogue."""

import torch
import triton
import triton.language as tl

BLOCK_M = 16
BLOCK_K = 256


@triton.jit
def _mv_sigmoid_sub_kernel(a_ptr, v_ptr, o_ptr, y_ptr, m, k, alpha, o_scalar, HAS_OTHER: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < m
    acc = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)
    for start in range(0, k, BLOCK_K):
        cols = start + tl.arange(0, BLOCK_K)
        col_ok = cols < k
        a = tl.load(a_ptr + rows[:, None] * k + cols[None, :], mask=row_ok[:, None] & col_ok[None, :], other=0.0)
        v = tl.load(v_ptr + cols, mask=col_ok, other=0.0)
        acc += a.to(tl.float32) * v.to(tl.float32)[None, :]
    z = tl.sum(acc, axis=1)
    s = 1.0 / (1.0 + tl.exp(-z))
    if HAS_OTHER:
        o = tl.load(o_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
    else:
        o = o_scalar
    tl.store(y_ptr + rows, (s - alpha * o).to(y_ptr.dtype.element_ty), mask=row_ok)


def fused_mv_sigmoid_sub(input, vec, other, alpha=1, *, out=None) -> torch.Tensor:
    a = input.contiguous()
    v = vec.contiguous()
    m, k = a.shape
    has_other = isinstance(other, torch.Tensor) and other.dim() > 0
    if has_other:
        o, o_scalar = other.expand(m).contiguous(), 0.0
    else:
        o, o_scalar = v, float(other.item() if isinstance(other, torch.Tensor) else other)
    y = out if out is not None and out.is_contiguous() and out.shape == (m,) else torch.empty(m, dtype=a.dtype,
                                                                                            device=a.device)
    if m:
        _mv_sigmoid_sub_kernel[(triton.cdiv(m, BLOCK_M),)](a, v, o, y, m, k, float(alpha), o_scalar,
                                                           HAS_OTHER=has_other, BLOCK_M=BLOCK_M, BLOCK_K=BLOCK_K,
                                                           num_warps=8)  # fmt: skip
    if out is not None and y is not out:
        out.copy_(y)
        return out
    return y
