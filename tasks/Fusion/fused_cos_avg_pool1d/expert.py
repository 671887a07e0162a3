"""Expert kernel for Fusion/fused_cos_avg_pool1d: each program computes BLOCK outputs of one (n, c) row,
taking the cosine on the loads of every window (the cosine tensor is never written). fp32 math.

Divisor: with count_include_pad, the window's span clipped to [-padding, L + padding); otherwise its
span clipped to the input [0, L).
"""

import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _cos_avg_pool1d_kernel(x_ptr, y_ptr, L, L_out, stride, padding, K: tl.constexpr, COUNT_PAD: tl.constexpr,
                           BLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    o = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    omask = o < L_out
    start = o * stride - padding
    acc = tl.zeros([BLOCK], tl.float32)
    for k in tl.static_range(K):  # window taps, unrolled (neighbouring taps hit the same cache lines)
        pos = start + k
        m = omask & (pos >= 0) & (pos < L)
        x = tl.load(x_ptr + row * L + pos, mask=m, other=0.0).to(tl.float32)
        acc += tl.where(m, tl.cos(x), 0.0)
    end = start + K
    if COUNT_PAD:
        lo = start
        hi = tl.minimum(end, L + padding)
    else:
        lo = tl.maximum(start, 0)
        hi = tl.minimum(end, L)
    count = tl.maximum(hi - lo, 1).to(tl.float32)
    tl.store(y_ptr + row * L_out + o, (acc / count).to(y_ptr.dtype.element_ty), mask=omask)


def _out_len(L, k, s, p, ceil_mode):
    span = L + 2 * p - k
    n = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (n - 1) * s >= L + p:  # the last window must start inside the input or left padding
        n -= 1
    return n


def fused_cos_avg_pool1d(input, kernel_size: int, stride: int = None, padding: int = 0, ceil_mode: bool = False,
                         count_include_pad: bool = True) -> torch.Tensor:  # fmt: skip
    k = int(kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size)
    s = stride if stride else k
    s = int(s[0] if isinstance(s, (tuple, list)) else s)
    p = int(padding[0] if isinstance(padding, (tuple, list)) else padding)
    x = input.contiguous()
    L = x.shape[-1]
    L_out = _out_len(L, k, s, p, ceil_mode)
    y = torch.empty((*x.shape[:-1], L_out), dtype=x.dtype, device=x.device)
    rows = x.numel() // L if L else 0
    if rows and L_out > 0:
        grid = (rows, triton.cdiv(L_out, BLOCK))
        _cos_avg_pool1d_kernel[grid](x, y, L, L_out, s, p, K=k, COUNT_PAD=count_include_pad, BLOCK=BLOCK,
                                     num_warps=4)  # fmt: skip
    return y
