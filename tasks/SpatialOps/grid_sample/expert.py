"""Expert kernel for SpatialOps/grid_sample: one program per block of output points (flattened over batch and
output positions). Each point unnormalises its grid coordinates, applies the padding rule (border clamp or
reflection) and finds its bilinear/trilinear taps and weights (or the nearest voxel, ties to even) once; it
then loops over the channels, gathering the taps and writing coalesced output rows."""

import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _unnormalize(g, size, ALIGN: tl.constexpr):
    if ALIGN:
        r = ((g + 1.0) / 2.0) * (size - 1)
    else:
        r = ((g + 1.0) * size - 1.0) / 2.0
    return r


@triton.jit
def _reflect(x, twice_low, twice_high):
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    safe_span = tl.where(span > 0, span, 1.0)
    d = tl.abs(x - lo)
    flips = tl.floor(d / safe_span)
    extra = d - flips * safe_span
    even = (flips - 2.0 * tl.floor(flips / 2.0)) == 0.0
    r = tl.where(even, extra + lo, safe_span - extra + lo)
    return tl.where(span > 0, r, 0.0)


@triton.jit
def _source_index(g, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    x = _unnormalize(g, size, ALIGN)
    sizef = size * 1.0
    if PAD == 1:  # border
        x = tl.minimum(tl.maximum(x, 0.0), sizef - 1.0)
    elif PAD == 2:  # reflection
        if ALIGN:
            x = _reflect(x, 0.0, 2.0 * (sizef - 1.0))
        else:
            x = _reflect(x, -1.0, 2.0 * sizef - 1.0)
        x = tl.minimum(tl.maximum(x, 0.0), sizef - 1.0)
    return x


@triton.jit
def _round_half_even(x):
    fl = tl.floor(x)
    diff = x - fl
    odd = (fl - 2.0 * tl.floor(fl / 2.0)) != 0.0
    return tl.where(diff > 0.5, fl + 1.0, tl.where(diff < 0.5, fl, tl.where(odd, fl + 1.0, fl)))


@triton.jit
def _grid_sample_kernel(x_ptr, g_ptr, out_ptr, total, P, C, D, H, W,
                        IS3D: tl.constexpr, NEAREST: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr,
                        BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < total
    n = offs // P
    p = offs - n * P
    NDIM: tl.constexpr = 3 if IS3D else 2
    gx = tl.load(g_ptr + offs * NDIM, mask=mask, other=0.0).to(tl.float32)
    gy = tl.load(g_ptr + offs * NDIM + 1, mask=mask, other=0.0).to(tl.float32)
    ix = _source_index(gx, W, PAD, ALIGN)
    iy = _source_index(gy, H, PAD, ALIGN)
    if IS3D:
        gz = tl.load(g_ptr + offs * NDIM + 2, mask=mask, other=0.0).to(tl.float32)
        iz = _source_index(gz, D, PAD, ALIGN)
    else:
        iz = tl.zeros([BLOCK], dtype=tl.float32)
    plane = D * H * W
    in_base = n * C * plane
    out_base = n * C * P + p
    if NEAREST:
        xn = _round_half_even(ix)
        yn = _round_half_even(iy)
        zn = _round_half_even(iz)
        ok = mask & (xn >= 0) & (xn <= W - 1) & (yn >= 0) & (yn <= H - 1) & (zn >= 0) & (zn <= D - 1)
        src = (tl.where(ok, zn, 0.0).to(tl.int64) * H + tl.where(ok, yn, 0.0).to(tl.int64)) * W \
            + tl.where(ok, xn, 0.0).to(tl.int64)
        for c in range(0, C):
            v = tl.load(x_ptr + in_base + c * plane + src, mask=ok, other=0.0).to(tl.float32)
            tl.store(out_ptr + out_base + c * P, v.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        x0 = tl.floor(ix)
        y0 = tl.floor(iy)
        z0 = tl.floor(iz)
        tx = ix - x0
        ty = iy - y0
        tz = iz - z0
        ZT: tl.constexpr = 2 if IS3D else 1
        for c in range(0, C):
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for dz in tl.static_range(ZT):
                zc = z0 + dz
                if IS3D:
                    wz = tz if dz == 1 else 1.0 - tz
                else:
                    wz = tl.full([BLOCK], 1.0, dtype=tl.float32)
                for dy in tl.static_range(2):
                    yc = y0 + dy
                    wy = ty if dy == 1 else 1.0 - ty
                    for dx in tl.static_range(2):
                        xc = x0 + dx
                        wx = tx if dx == 1 else 1.0 - tx
                        ok = mask & (xc >= 0) & (xc <= W - 1) & (yc >= 0) & (yc <= H - 1) & (zc >= 0) & (zc <= D - 1)
                        src = (tl.where(ok, zc, 0.0).to(tl.int64) * H + tl.where(ok, yc, 0.0).to(tl.int64)) * W \
                            + tl.where(ok, xc, 0.0).to(tl.int64)
                        v = tl.load(x_ptr + in_base + c * plane + src, mask=ok, other=0.0).to(tl.float32)
                        acc += v * (wx * wy * wz)
            tl.store(out_ptr + out_base + c * P, acc.to(out_ptr.dtype.element_ty), mask=mask)


_PADS = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    if mode not in ("bilinear", "nearest"):
        raise ValueError("Mode should be either 'bilinear' or 'nearest'.")
    if padding_mode not in _PADS:
        raise ValueError("Padding mode should be one of 'zeros', 'border', or 'reflection'.")
    x = input.contiguous()
    g = grid.contiguous()
    is3d = x.dim() == 5
    n, c = x.shape[:2]
    d, h, w = (x.shape[2:] if is3d else (1, *x.shape[2:]))
    out_sp = g.shape[1:-1]
    out = torch.empty((n, c, *out_sp), dtype=x.dtype, device=x.device)
    p = 1
    for s in out_sp:
        p *= s
    total = n * p
    if total and c:
        _grid_sample_kernel[(triton.cdiv(total, BLOCK),)](x, g, out, total, p, c, d, h, w, IS3D=is3d,
                                                          NEAREST=mode == "nearest", PAD=_PADS[padding_mode],
                                                          ALIGN=bool(align_corners), BLOCK=BLOCK)  # fmt: skip
    return out
