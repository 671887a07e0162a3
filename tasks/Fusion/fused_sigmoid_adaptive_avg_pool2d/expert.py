"""Expert kernels for Fusion/fused_sigmoid_adaptive_avg_pool2d.

Small windows (at most SMALL_AREA elements): one lane per output cell loops over its window and
applies sigmoid directly. Large windows:
Stage 1: grid (output cell, row split); each program sums its share of the cell's window rows in
[BR, BC] tiles (row-contiguous loads) into a partial. Stage 2: per cell, add the partials, divide by the
window size, apply sigmoid. The row split keeps the GPU busy when there are few, large windows
(global pooling). fp32 math.
"""

import torch
import triton
import triton.language as tl

BR = 16
BC = 128
TARGET_PROGRAMS = 512  # row splits only while there are fewer cells than this


SMALL_AREA = 100


@triton.jit
def _small_window_kernel(x_ptr, y_ptr, n_cells, H, W, oh, ow, KH: tl.constexpr, KW: tl.constexpr,
                         BLOCK: tl.constexpr):  # fmt: skip
    cells = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = cells < n_cells
    j = cells % ow
    i = (cells // ow) % oh
    plane = cells // (ow * oh)
    h0 = (i * H) // oh
    h1 = ((i + 1) * H + oh - 1) // oh
    w0 = (j * W) // ow
    w1 = ((j + 1) * W + ow - 1) // ow
    acc = tl.zeros([BLOCK], tl.float32)
    for dh in range(KH):
        for dw in range(KW):
            m = ok & (h0 + dh < h1) & (w0 + dw < w1)
            acc += tl.load(x_ptr + plane * H * W + (h0 + dh) * W + w0 + dw, mask=m, other=0.0).to(tl.float32)
    mean = acc / ((h1 - h0) * (w1 - w0)).to(tl.float32)
    tl.store(y_ptr + cells, (1.0 / (1.0 + tl.exp(-mean))).to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def _window_partial_kernel(x_ptr, part_ptr, H, W, oh, ow, split, BR: tl.constexpr, BC: tl.constexpr):
    cell = tl.program_id(0).to(tl.int64)
    part = tl.program_id(1).to(tl.int64)
    j = cell % ow
    i = (cell // ow) % oh
    plane = cell // (ow * oh)
    h0 = (i * H) // oh
    h1 = ((i + 1) * H + oh - 1) // oh
    w0 = (j * W) // ow
    w1 = ((j + 1) * W + ow - 1) // ow
    rows_per = (h1 - h0 + split - 1) // split
    r0 = h0 + part * rows_per
    r1 = tl.minimum(r0 + rows_per, h1)
    base = plane * H * W
    acc = tl.zeros([BR, BC], tl.float32)
    for r in range(r0, r1, BR):
        rr = r + tl.arange(0, BR)
        for c in range(w0, w1, BC):
            cc = c + tl.arange(0, BC)
            mask = (rr[:, None] < r1) & (cc[None, :] < w1)
            acc += tl.load(x_ptr + base + rr[:, None] * W + cc[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(part_ptr + cell * split + part, tl.sum(tl.sum(acc, axis=1), axis=0))


@triton.jit
def _finish_kernel(part_ptr, y_ptr, n_cells, H, W, oh, ow, split, SPLIT_P2: tl.constexpr, BLOCK: tl.constexpr):
    cells = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = cells < n_cells
    s = tl.arange(0, SPLIT_P2)
    parts = tl.load(part_ptr + cells[:, None] * split + s[None, :], mask=ok[:, None] & (s[None, :] < split),
                    other=0.0)  # fmt: skip
    total = tl.sum(parts, axis=1)
    j = cells % ow
    i = (cells // ow) % oh
    cnt_h = ((i + 1) * H + oh - 1) // oh - (i * H) // oh
    cnt_w = ((j + 1) * W + ow - 1) // ow - (j * W) // ow
    mean = total / (cnt_h * cnt_w).to(tl.float32)
    tl.store(y_ptr + cells, (1.0 / (1.0 + tl.exp(-mean))).to(y_ptr.dtype.element_ty), mask=ok)


def fused_sigmoid_adaptive_avg_pool2d(input, output_size) -> torch.Tensor:
    x = input.contiguous()
    *lead, H, W = x.shape
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    oh = H if output_size[0] is None else int(output_size[0])
    ow = W if output_size[1] is None else int(output_size[1])
    planes = x.numel() // max(H * W, 1)
    y = torch.empty((*lead, oh, ow), dtype=x.dtype, device=x.device)
    n_cells = planes * oh * ow
    if n_cells == 0:
        return y
    max_rows = -(-H // oh) + 1
    max_cols = -(-W // ow) + 1
    if max_rows * max_cols <= SMALL_AREA:
        block = 256
        _small_window_kernel[(triton.cdiv(n_cells, block),)](x, y, n_cells, H, W, oh, ow, KH=max_rows, KW=max_cols,
                                                             BLOCK=block, num_warps=4)  # fmt: skip
        return y
    split = max(1, min(triton.cdiv(TARGET_PROGRAMS, n_cells), triton.cdiv(max_rows, BR)))
    parts = torch.empty(n_cells * split, dtype=torch.float32, device=x.device)
    _window_partial_kernel[(n_cells, split)](x, parts, H, W, oh, ow, split, BR=BR, BC=BC, num_warps=4)
    block = 256
    _finish_kernel[(triton.cdiv(n_cells, block),)](parts, y, n_cells, H, W, oh, ow, split,
                                                   SPLIT_P2=triton.next_power_of_2(split), BLOCK=block,
                                                   num_warps=4)  # fmt: skip
    return y
