"""Expert kernel for SpatialOps/grid_sample_with_affine: affine grid and sampling fused in one pass.

Each program takes a block of output pixels of one image, forms their normalised base coordinates,
applies theta (the grid is never materialised), maps them to input pixel coordinates with torch's
padding rules (zeros, border, reflection) and samples every channel, bilinear or nearest
(round half to even, as torch).
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
def _source_coord(g, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    sizef = size.to(tl.float32)
    if ALIGN:
        c = (g + 1.0) / 2.0 * (sizef - 1.0)
    else:
        c = ((g + 1.0) * sizef - 1.0) / 2.0
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
    # normalised base-grid coordinates of the output pixel (torch's affine_grid linspace)
    if ALIGN:
        bx = tl.where(Wo > 1, -1.0 + 2.0 * ow.to(tl.float32) / tl.maximum(Wo - 1, 1).to(tl.float32), -1.0)
        by = tl.where(Ho > 1, -1.0 + 2.0 * oh.to(tl.float32) / tl.maximum(Ho - 1, 1).to(tl.float32), -1.0)
    else:
        bx = (2.0 * ow.to(tl.float32) + 1.0) / Wo.to(tl.float32) - 1.0
        by = (2.0 * oh.to(tl.float32) + 1.0) / Ho.to(tl.float32) - 1.0
    t = theta_ptr + n * 6
    gx = bx * tl.load(t) + by * tl.load(t + 1) + tl.load(t + 2)
    gy = bx * tl.load(t + 3) + by * tl.load(t + 4) + tl.load(t + 5)
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
        wx0 = 1.0 - wx1
        wy0 = 1.0 - wy1
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
            v = v00 * (wy0 * wx0) + v01 * (wy0 * wx1) + v10 * (wy1 * wx0) + v11 * (wy1 * wx1)
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
