"""Expert kernel for Pooling/avg_pool1d: each program averages a block of output positions of one row,
loading the windows as a (BLOCK, K) tile so that kernel_size == stride reads are contiguous."""

import torch
import triton
import triton.language as tl

BLOCK = 512


@triton.jit
def _avg_pool1d_kernel(x_ptr, y_ptr, L, L_out, n_blk, stride, padding,
                       KSIZE: tl.constexpr, KPOW2: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # flat grid: (row, block of output positions)
    row = pid // n_blk
    j = (pid % n_blk) * BLOCK + tl.arange(0, BLOCK)
    t = tl.arange(0, KPOW2)
    pos = j[:, None] * stride - padding + t[None, :]  # (BLOCK, KPOW2) input positions
    mask = (j[:, None] < L_out) & (t[None, :] < KSIZE) & (pos >= 0) & (pos < L)
    vals = tl.load(x_ptr + row * L + pos, mask=mask, other=0.0).to(tl.float32)
    avg = tl.sum(vals, axis=1) / KSIZE
    tl.store(y_ptr + row * L_out + j, avg.to(y_ptr.dtype.element_ty), mask=j < L_out)


def avg_pool1d(input: torch.Tensor, kernel_size: int, stride: int | None = None, padding: int = 0) -> torch.Tensor:
    def as_int(v):
        return int(v[0]) if isinstance(v, (tuple, list)) else int(v)

    k = as_int(kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else as_int(stride)
    p = as_int(padding)
    if k <= 0 or s <= 0 or p < 0 or p > k // 2:
        raise ValueError("avg_pool1d: need kernel_size > 0, stride > 0 and 0 <= padding <= kernel_size / 2")
    x = input.contiguous()
    L = x.shape[-1]
    L_out = (L + 2 * p - k) // s + 1
    if L_out <= 0:
        raise ValueError("avg_pool1d: output length would be non-positive")
    rows = x.numel() // L if L > 0 else 0
    y = torch.empty((*x.shape[:-1], L_out), dtype=x.dtype, device=x.device)
    if rows > 0:
        n_blk = triton.cdiv(L_out, BLOCK)
        _avg_pool1d_kernel[(rows * n_blk,)](x, y, L, L_out, n_blk, s, p,
                                 KSIZE=k, KPOW2=triton.next_power_of_2(k), BLOCK=BLOCK)
    return y
