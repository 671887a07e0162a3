"""Expert kernels for Fusion/fused_pairwise_distance_adaptive_avg_pool2d.

1. Per sample, each program takes a block of pooled cells (flattened over C, OH, OW), averages the adaptive
   window of x1 and of x2 for each cell (window bounds floor(i*H/OH) .. ceil((i+1)*H/OH)), and reduces
   |pool(x1) - pool(x2)|^p over its cells to one partial sum. Neither pooled tensor is materialized.
2. One program per sample adds its partial sums (fixed order: deterministic), takes the p-th root and
   adds eps.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.pooling import max_adaptive_window

BLOCK = 4096  # elements per tile: cells x window columns
FIN_BLOCK = 1024


@triton.jit
def _pool_diff_kernel(x1_ptr, x2_ptr, part_ptr, C, H, W, OH, OW, nblk, p,
                      P_KIND: tl.constexpr, KH: tl.constexpr, KWP: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    n = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1).to(tl.int64)
    cell = blk * BLOCK + tl.arange(0, BLOCK)
    cm = cell < C * OH * OW
    c = cell // (OH * OW)
    oh = (cell // OW) % OH
    ow = cell % OW
    h0 = (oh * H) // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    base = (n * C + c) * H * W
    dx = tl.arange(0, KWP)  # window columns as a second tile axis: contiguous loads along w
    wx = w0[:, None] + dx[None, :]
    wm = cm[:, None] & (wx < w1[:, None])
    s1 = tl.zeros([BLOCK, KWP], dtype=tl.float32)
    s2 = tl.zeros([BLOCK, KWP], dtype=tl.float32)
    for dy in tl.static_range(KH):
        hy = h0 + dy
        m = wm & (hy < h1)[:, None]
        off = (base + hy * W)[:, None] + wx
        s1 += tl.load(x1_ptr + off, mask=m, other=0.0).to(tl.float32)
        s2 += tl.load(x2_ptr + off, mask=m, other=0.0).to(tl.float32)
    s1 = tl.sum(s1, axis=1)
    s2 = tl.sum(s2, axis=1)
    area = ((h1 - h0) * (w1 - w0)).to(tl.float32)
    d = tl.abs(s1 / area - s2 / area)
    if P_KIND == 2:
        t = d * d
    elif P_KIND == 1:
        t = d
    else:
        t = tl.where(d > 0, tl.exp(p * tl.log(d)), 0.0)
    t = tl.where(cm, t, 0.0)
    tl.store(part_ptr + n * nblk + blk, tl.sum(t, axis=0))


@triton.jit
def _finish_kernel(part_ptr, y_ptr, nblk, p, eps, P_KIND: tl.constexpr, BLOCK: tl.constexpr):
    n = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for b0 in range(0, nblk, BLOCK):
        acc += tl.load(part_ptr + n * nblk + b0 + offs, mask=b0 + offs < nblk, other=0.0)
    s = tl.sum(acc, axis=0)
    if P_KIND == 2:
        r = tl.sqrt(s)
    elif P_KIND == 1:
        r = s
    else:
        r = tl.where(s > 0, tl.exp(tl.log(s) / p), 0.0)
    tl.store(y_ptr + n, r + eps)


def fused_pairwise_distance_adaptive_avg_pool2d(x1, x2, output_size, p=2.0, eps=1e-06, keepdim=False):
    a, b = x1.contiguous(), x2.contiguous()
    N, C, H, W = a.shape
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    oh = H if oh is None else int(oh)
    ow = W if ow is None else int(ow)
    p = float(p)
    kind = 2 if p == 2.0 else (1 if p == 1.0 else 0)
    cells = C * oh * ow
    kwp = triton.next_power_of_2(max(max_adaptive_window(W, ow), 1))
    nblk = triton.cdiv(cells, max(16, BLOCK // kwp))
    part = torch.empty((N, max(nblk, 1)), dtype=torch.float32, device=a.device)
    y = torch.empty(N, dtype=a.dtype, device=a.device)
    if N:
        if nblk:
            kh = max_adaptive_window(H, oh)
            _pool_diff_kernel[(N, nblk)](a, b, part, C, H, W, oh, ow, nblk, p, P_KIND=kind, KH=kh, KWP=kwp,
                                         BLOCK=max(16, BLOCK // kwp), num_warps=8)  # fmt: skip
        else:
            part.zero_()
        _finish_kernel[(N,)](part, y, max(nblk, 1), p, float(eps), P_KIND=kind, BLOCK=FIN_BLOCK, num_warps=4)
    return y.reshape(N, 1, 1, 1) if keepdim else y
