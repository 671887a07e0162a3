"""Expert kernel for Pooling/adaptive_avg_pool2d: one program per block of output cells (flattened over
planes, rows, columns); each cell computes its own adaptive window bounds and averages it with masked
loads, the loop bounds being the largest window size."""

import torch
import triton
import triton.language as tl

from kbx.experts.pooling import max_adaptive_window

BLOCK = 1024


@triton.jit
def _adaptive_avg_kernel(x_ptr, out_ptr, total, H, W, OH, OW, KH, KW, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < total
    j = offs % OW
    t = offs // OW
    i = t % OH
    plane = t // OH
    h0 = (i * H) // OH
    h1 = ((i + 1) * H + OH - 1) // OH
    w0 = (j * W) // OW
    w1 = ((j + 1) * W + OW - 1) // OW
    base = plane * H * W
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for dh in range(0, KH):
        h = h0 + dh
        hmask = mask & (h < h1)
        for dw in range(0, KW):
            w = w0 + dw
            m = hmask & (w < w1)
            acc += tl.load(x_ptr + base + h * W + w, mask=m, other=0.0).to(tl.float32)
    count = ((h1 - h0) * (w1 - w0)).to(tl.float32)
    tl.store(out_ptr + offs, (acc / count).to(out_ptr.dtype.element_ty), mask=mask)


def adaptive_avg_pool2d(input, output_size):
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    h, w = input.shape[-2:]
    oh = h if oh is None else oh
    ow = w if ow is None else ow
    x = input.contiguous()
    out = torch.empty((*input.shape[:-2], oh, ow), dtype=input.dtype, device=input.device)
    total = out.numel()
    if total:
        _adaptive_avg_kernel[(triton.cdiv(total, BLOCK),)](x, out, total, h, w, oh, ow, max_adaptive_window(h, oh),
                                                           max_adaptive_window(w, ow), BLOCK=BLOCK)  # fmt: skip
    return out
