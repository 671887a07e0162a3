"""Expert kernels for Fusion/fused_avg_pool2d_cosine_similarity.

The cosine kernel reads x1 and x2 once: each program owns BLOCK spatial positions of one sample and walks
the channels (loads coalesced along W), accumulating the dot product and both squared norms in fp32, and
writes the (N, H, W) cosine map (1/C of the input's size). The pooling kernel averages kernel_size^2 taps
of that map per output; zero padding counts in the divisor, which in floor mode is always kernel_size^2.
"""

import torch
import triton
import triton.language as tl

BLOCK = 512


@triton.jit
def _cosine_map_kernel(a_ptr, b_ptr, c_ptr, C, HW, eps, BLOCK: tl.constexpr):
    n = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < HW
    dot = tl.zeros([BLOCK], tl.float32)
    sa = tl.zeros([BLOCK], tl.float32)
    sb = tl.zeros([BLOCK], tl.float32)
    base = n * C * HW
    for ch in range(0, C):
        a = tl.load(a_ptr + base + ch * HW + offs, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + base + ch * HW + offs, mask=m, other=0.0).to(tl.float32)
        dot += a * b
        sa += a * a
        sb += b * b
    cos = dot / (tl.maximum(tl.sqrt(sa), eps) * tl.maximum(tl.sqrt(sb), eps))
    tl.store(c_ptr + n * HW + offs, cos, mask=m)


@triton.jit
def _avg_pool_kernel(c_ptr, y_ptr, H, W, Ho, Wo, stride, padding, K: tl.constexpr, BLOCK: tl.constexpr):
    n = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < Ho * Wo
    oh = offs // Wo
    ow = offs % Wo
    h0 = oh * stride - padding
    w0 = ow * stride - padding
    acc = tl.zeros([BLOCK], tl.float32)
    for kh in tl.static_range(K):
        for kw in tl.static_range(K):
            h = h0 + kh
            w = w0 + kw
            ok = m & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            acc += tl.load(c_ptr + n * H * W + h * W + w, mask=ok, other=0.0)
    tl.store(y_ptr + n * Ho * Wo + offs, (acc / (K * K)).to(y_ptr.dtype.element_ty), mask=m)


def fused_avg_pool2d_cosine_similarity(x1, x2, kernel_size: int, stride: int = None, padding: int = 0,
                                       eps: float = 1e-08) -> torch.Tensor:  # fmt: skip
    k = int(kernel_size)
    s = int(stride) if stride else k
    p = int(padding)
    a, b = x1.contiguous(), x2.contiguous()
    n, c, h, w = a.shape
    hw = h * w
    cmap = torch.empty((n, h, w), dtype=torch.float32, device=a.device)
    ho = (h + 2 * p - k) // s + 1
    wo = (w + 2 * p - k) // s + 1
    y = torch.empty((n, 1, ho, wo), dtype=a.dtype, device=a.device)
    if n and hw:
        _cosine_map_kernel[(n, triton.cdiv(hw, BLOCK))](a, b, cmap, c, hw, float(eps), BLOCK=BLOCK, num_warps=4)
    if y.numel():
        _avg_pool_kernel[(n, triton.cdiv(ho * wo, BLOCK))](cmap, y, h, w, ho, wo, s, p, K=k, BLOCK=BLOCK,
                                                           num_warps=4)  # fmt: skip
    return y
