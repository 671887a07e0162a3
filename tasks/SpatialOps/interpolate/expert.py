"""Expert kernel for SpatialOps/interpolate: one gather kernel over all output pixels for nearest,
bilinear and bicubic 2-D resizing, following torch's source-index and weight formulas."""

import math

import torch
import triton
import triton.language as tl

BLOCK = 512
_MODES = {"nearest": 0, "bilinear": 1, "bicubic": 2}


@triton.jit
def _cubic_near(t, A: tl.constexpr):
    # weight for a neighbour at distance t in [0, 1]
    return ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0


@triton.jit
def _cubic_far(t, A: tl.constexpr):
    # weight for a neighbour at distance t in [1, 2]
    return ((A * t - 5.0 * A) * t + 8.0 * A) * t - 4.0 * A


@triton.jit
def _row_cubic(row_ptr, x0, W, wx0, wx1, wx2, wx3, mask):
    c0 = tl.minimum(tl.maximum(x0 - 1, 0), W - 1)
    c1 = tl.minimum(tl.maximum(x0, 0), W - 1)
    c2 = tl.minimum(tl.maximum(x0 + 1, 0), W - 1)
    c3 = tl.minimum(tl.maximum(x0 + 2, 0), W - 1)
    v0 = tl.load(row_ptr + c0, mask=mask, other=0.0).to(tl.float32)
    v1 = tl.load(row_ptr + c1, mask=mask, other=0.0).to(tl.float32)
    v2 = tl.load(row_ptr + c2, mask=mask, other=0.0).to(tl.float32)
    v3 = tl.load(row_ptr + c3, mask=mask, other=0.0).to(tl.float32)
    return v0 * wx0 + v1 * wx1 + v2 * wx2 + v3 * wx3


@triton.jit
def _interp_kernel(x_ptr, y_ptr, total, H, W, Ho, Wo, scale_h, scale_w,
                   MODE: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr):
    # one flat 1-D grid over every output element (no 65535 limit on a second grid axis)
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < total
    plane = flat // (Ho * Wo)
    offs = flat % (Ho * Wo)
    oy = offs // Wo
    ox = offs % Wo
    src = x_ptr + plane * H * W
    if MODE == 0:
        iy = tl.minimum(tl.floor(oy.to(tl.float32) * scale_h).to(tl.int64), H - 1)
        ix = tl.minimum(tl.floor(ox.to(tl.float32) * scale_w).to(tl.int64), W - 1)
        out = tl.load(src + iy * W + ix, mask=mask, other=0.0).to(tl.float32)
    else:
        if ALIGN:
            fy = oy.to(tl.float32) * scale_h
            fx = ox.to(tl.float32) * scale_w
        else:
            fy = (oy.to(tl.float32) + 0.5) * scale_h - 0.5
            fx = (ox.to(tl.float32) + 0.5) * scale_w - 0.5
        if MODE == 1:
            fy = tl.maximum(fy, 0.0)
            fx = tl.maximum(fx, 0.0)
            y0 = fy.to(tl.int64)  # truncation == floor for fy >= 0
            x0 = fx.to(tl.int64)
            ly = fy - y0.to(tl.float32)
            lx = fx - x0.to(tl.float32)
            y1 = tl.minimum(y0 + 1, H - 1)
            x1 = tl.minimum(x0 + 1, W - 1)
            v00 = tl.load(src + y0 * W + x0, mask=mask, other=0.0).to(tl.float32)
            v01 = tl.load(src + y0 * W + x1, mask=mask, other=0.0).to(tl.float32)
            v10 = tl.load(src + y1 * W + x0, mask=mask, other=0.0).to(tl.float32)
            v11 = tl.load(src + y1 * W + x1, mask=mask, other=0.0).to(tl.float32)
            out = (1.0 - ly) * ((1.0 - lx) * v00 + lx * v01) + ly * ((1.0 - lx) * v10 + lx * v11)
        else:
            y0f = tl.floor(fy)
            x0f = tl.floor(fx)
            ty = fy - y0f
            tx = fx - x0f
            y0 = y0f.to(tl.int64)
            x0 = x0f.to(tl.int64)
            wx0 = _cubic_far(tx + 1.0, -0.75)
            wx1 = _cubic_near(tx, -0.75)
            wx2 = _cubic_near(1.0 - tx, -0.75)
            wx3 = _cubic_far(2.0 - tx, -0.75)
            wy0 = _cubic_far(ty + 1.0, -0.75)
            wy1 = _cubic_near(ty, -0.75)
            wy2 = _cubic_near(1.0 - ty, -0.75)
            wy3 = _cubic_far(2.0 - ty, -0.75)
            r0 = tl.minimum(tl.maximum(y0 - 1, 0), H - 1)
            r1 = tl.minimum(tl.maximum(y0, 0), H - 1)
            r2 = tl.minimum(tl.maximum(y0 + 1, 0), H - 1)
            r3 = tl.minimum(tl.maximum(y0 + 2, 0), H - 1)
            out = (_row_cubic(src + r0 * W, x0, W, wx0, wx1, wx2, wx3, mask) * wy0
                   + _row_cubic(src + r1 * W, x0, W, wx0, wx1, wx2, wx3, mask) * wy1
                   + _row_cubic(src + r2 * W, x0, W, wx0, wx1, wx2, wx3, mask) * wy2
                   + _row_cubic(src + r3 * W, x0, W, wx0, wx1, wx2, wx3, mask) * wy3)
    tl.store(y_ptr + flat, out.to(y_ptr.dtype.element_ty), mask=mask)


def _pair(v):
    return (v, v) if not isinstance(v, (tuple, list)) else (v[0], v[1])


def _axis_scale(in_size, out_size, factor, align_corners):
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if factor is not None and factor > 0:
        return 1.0 / factor
    return in_size / out_size


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, bilinear, bicubic)")
    if input.dim() != 4:
        raise ValueError("interpolate: expected a 4-D (N, C, H, W) input")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes")
    align = bool(align_corners) if mode != "nearest" else False
    x = input.contiguous()
    N, C, H, W = x.shape
    fh = fw = None
    if size is not None:
        Ho, Wo = (int(s) for s in _pair(size))
    else:
        fh, fw = (float(f) for f in _pair(scale_factor))
        Ho, Wo = int(math.floor(H * fh)), int(math.floor(W * fw))
    y = torch.empty((N, C, Ho, Wo), dtype=x.dtype, device=x.device)
    if y.numel() == 0:
        return y
    if mode == "nearest":
        sh, sw = _axis_scale(H, Ho, fh, False), _axis_scale(W, Wo, fw, False)
    else:
        sh, sw = _axis_scale(H, Ho, fh, align), _axis_scale(W, Wo, fw, align)
    grid = (triton.cdiv(y.numel(), BLOCK),)
    _interp_kernel[grid](x, y, y.numel(), H, W, Ho, Wo, sh, sw, MODE=_MODES[mode], ALIGN=align, BLOCK=BLOCK)
    return y
