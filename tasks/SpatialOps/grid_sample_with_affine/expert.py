"""Expert kernel for SpatialOps/grid_sample_with_affine: affine grid and sampling fused in one pass.

Each program takes a block of output pixels of one image, forms their normalised base coordinates,
applies theta (the grid is never materialised), maps them to input pixel coordinates with torch's
padding rules (zeros, border, reflection) and samples every channel, bilinear or nearest
(round half to even, as torch).

Coordinates follow torch's CUDA operation order, because at a 256-pixel input one ulp of the
normalised grid moves a sample by ~1.5e-5 pixels, enough to change an output by ~1.5e-4: the base grid
is torch.linspace(-1, 1, size) (start + step * i on the first half, end - step * (size - 1 - i) on the
second, each one FMA) scaled by (size - 1) and then by fp32(1 / size); theta is applied as a GEMM
accumulates (x * t0, then FMAs); unnormalisation is one FMA; bilinear weights are differences to the
far corner ((x0 + 1) - ix), accumulated NW, NE, SW, SE.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024

PADDING = {"zeros": 0, "border": 1, "reflection": 2}


@triton.jit
def _reflect(coord, twice_low, twice_high):
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    c = tl.abs(coord - lo)
    flips = tl.floor(c / span)
    extra = c - flips * span
    even = (flips - 2.0 * tl.floor(flips / 2.0)) == 0.0
    return tl.where(even, extra + lo, span - extra + lo)


@triton.jit
def _base_coord(i, size, ALIGN: tl.constexpr):
    """affine_grid's normalised coordinate of index i along an axis of `size` points (0 when size is 1).
    The two scalar divisions are IEEE-rounded (div_rn), as torch's host-side step and 1 / size are."""
    sizef = size.to(tl.float32)
    step = tl.math.div_rn(2.0, tl.maximum(size - 1, 1).to(tl.float32))
    v = tl.where(i < size // 2, tl.fma(step, i.to(tl.float32), -1.0),
                 tl.fma(-step, (size - 1 - i).to(tl.float32), 1.0))  # fmt: skip
    if not ALIGN:
        v = v * (sizef - 1.0) * tl.math.div_rn(1.0, sizef)
    return tl.where(size > 1, v, 0.0)


@triton.jit
def _source_coord(g, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    sizef = size.to(tl.float32)
    if ALIGN:
        c = (g + 1.0) / 2.0 * (sizef - 1.0)
    else:
        c = tl.fma(g + 1.0, sizef, -1.0) / 2.0
    if PAD == 2:
        if ALIGN:
            if size > 1:
                c = _reflect(c, 0.0, 2.0 * (sizef - 1.0))
            else:
                c = tl.zeros_like(c)
        else:
            c = _reflect(c, -1.0, 2.0 * sizef - 1.0)
    if PAD != 0:
        c = tl.minimum(tl.maximum(c, 0.0), sizef - 1.0)
    return c


@triton.jit
def _round_half_even(x):
    f = tl.floor(x)
    d = x - f
    f_even = (f - 2.0 * tl.floor(f / 2.0)) == 0.0
    return tl.where(d > 0.5, f + 1.0, tl.where(d < 0.5, f, tl.where(f_even, f, f + 1.0)))


@triton.jit(do_not_specialize=["H", "W", "Ho", "Wo"])  # sizes of 1 would otherwise become constexprs without .to()
def _grid_sample_kernel(x_ptr, theta_ptr, out_ptr, C, H, W, Ho, Wo,
                        sxn, sxc, sxh, sxw,
                        PAD: tl.constexpr, ALIGN: tl.constexpr, NEAREST: tl.constexpr,
                        BLOCK: tl.constexpr):  # fmt: skip
    n = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    npix = Ho * Wo
    mask = offs < npix
    oh = offs // Wo
    ow = offs % Wo
    bx = _base_coord(ow, Wo, ALIGN)  # normalised base-grid coordinates of the output pixel
    by = _base_coord(oh, Ho, ALIGN)
    t = theta_ptr + n * 6
    gx = tl.fma(by, tl.load(t + 1), bx * tl.load(t)) + tl.load(t + 2)
    gy = tl.fma(by, tl.load(t + 4), bx * tl.load(t + 3)) + tl.load(t + 5)
    ix = _source_coord(gx, W, PAD, ALIGN)
    iy = _source_coord(gy, H, PAD, ALIGN)
    x_base = x_ptr + n * sxn
    o_base = out_ptr + n * C * npix + offs
    if NEAREST:
        rx = _round_half_even(ix)
        ry = _round_half_even(iy)
        ok = mask & (rx >= 0.0) & (rx <= (W - 1).to(tl.float32)) & (ry >= 0.0) & (ry <= (H - 1).to(tl.float32))
        xi = tl.where(ok, rx, 0.0).to(tl.int64)
        yi = tl.where(ok, ry, 0.0).to(tl.int64)
        src = yi * sxh + xi * sxw
        for c in range(0, C):
            v = tl.load(x_base + c * sxc + src, mask=ok, other=0.0)
            tl.store(o_base + c * npix, v, mask=mask)
    else:
        fx0 = tl.floor(ix)
        fy0 = tl.floor(iy)
        wx1 = ix - fx0
        wy1 = iy - fy0
        wx0 = (fx0 + 1.0) - ix
        wy0 = (fy0 + 1.0) - iy
        in_x0 = (fx0 >= 0.0) & (fx0 <= (W - 1).to(tl.float32))
        in_x1 = (fx0 + 1.0 >= 0.0) & (fx0 + 1.0 <= (W - 1).to(tl.float32))
        in_y0 = (fy0 >= 0.0) & (fy0 <= (H - 1).to(tl.float32))
        in_y1 = (fy0 + 1.0 >= 0.0) & (fy0 + 1.0 <= (H - 1).to(tl.float32))
        x0 = tl.where(in_x0, fx0, 0.0).to(tl.int64)
        x1 = tl.where(in_x1, fx0 + 1.0, 0.0).to(tl.int64)
        y0 = tl.where(in_y0, fy0, 0.0).to(tl.int64)
        y1 = tl.where(in_y1, fy0 + 1.0, 0.0).to(tl.int64)
        m00 = mask & in_y0 & in_x0
        m01 = mask & in_y0 & in_x1
        m10 = mask & in_y1 & in_x0
        m11 = mask & in_y1 & in_x1
        for c in range(0, C):
            base = x_base + c * sxc
            v00 = tl.load(base + y0 * sxh + x0 * sxw, mask=m00, other=0.0).to(tl.float32)
            v01 = tl.load(base + y0 * sxh + x1 * sxw, mask=m01, other=0.0).to(tl.float32)
            v10 = tl.load(base + y1 * sxh + x0 * sxw, mask=m10, other=0.0).to(tl.float32)
            v11 = tl.load(base + y1 * sxh + x1 * sxw, mask=m11, other=0.0).to(tl.float32)
            v = v00 * (wx0 * wy0)
            v = tl.fma(v01, wx1 * wy0, v)
            v = tl.fma(v10, wx0 * wy1, v)
            v = tl.fma(v11, wx1 * wy1, v)
            tl.store(o_base + c * npix, v.to(out_ptr.dtype.element_ty), mask=mask)


def grid_sample_with_affine(input, theta, size, mode="bilinear", padding_mode="zeros", align_corners=False):
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"mode {mode!r} not supported")
    if padding_mode not in PADDING:
        raise ValueError(f"unknown padding_mode {padding_mode!r}")
    N, C, Ho, Wo = (int(s) for s in size)
    if input.dim() != 4 or input.shape[0] != N or input.shape[1] != C:
        raise RuntimeError(f"grid_sample_with_affine: input {tuple(input.shape)} does not match size {tuple(size)}")
    th = theta.to(torch.float32).contiguous()
    H, W = input.shape[2], input.shape[3]
    out = torch.empty((N, C, Ho, Wo), dtype=input.dtype, device=input.device)
    if out.numel():
        grid = (triton.cdiv(Ho * Wo, BLOCK), N)
        _grid_sample_kernel[grid](input, th, out, C, H, W, Ho, Wo, *input.stride(),
                                  PAD=PADDING[padding_mode], ALIGN=bool(align_corners),
                                  NEAREST=mode == "nearest", BLOCK=BLOCK)  # fmt: skip
    return out
