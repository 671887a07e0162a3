"""Expert kernel for Fusion/fused_pixel_shuffle_conv2d: an implicit-GEMM convolution whose epilogue adds the bias and
stores each result straight to its pixel-shuffled position (no intermediate conv output).

Each program owns a tile of BP output pixels (flattened over N, OH, OW) by BC output channels of one
group; for every kernel tap and block of BCI input channels it gathers the (pixels x in-channels)
input tile and multiplies it with the (in-channels x out-channels) weight tile by tl.dot, accumulating
in fp32 (stride, padding, dilation and groups handled by index math).
"""

import torch
import triton
import triton.language as tl

BP, BC, BCI = 128, 32, 16
CPU_BP = 1024


def _pair(v):
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


@triton.jit
def _conv_pixel_shuffle_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, C_in, H, W, C_out, OH, OW, cin_g, cout_g,
                               sh, sw, ph, pw, dh, dw,
                               R: tl.constexpr, HAS_BIAS: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                               BP: tl.constexpr, BC: tl.constexpr, BCI: tl.constexpr):  # fmt: skip
    pid_p = tl.program_id(0).to(tl.int64)
    pid_c = tl.program_id(1).to(tl.int64)
    g = tl.program_id(2).to(tl.int64)
    p = pid_p * BP + tl.arange(0, BP)
    pm = p < N * OH * OW
    n = p // (OH * OW)
    rem = p % (OH * OW)
    oh = rem // OW
    ow = rem % OW
    co_g = pid_c * BC + tl.arange(0, BC)
    cm = co_g < cout_g
    co = g * cout_g + co_g
    acc = tl.zeros((BP, BC), dtype=tl.float32)
    ci_offs = tl.arange(0, BCI)
    # One flat loop over (input-channel block, tap): the software pipeliner then buffers a single
    # (BP x BCI) + (BCI x BC) tile pair per stage. Unrolling the KH * KW taps inside a loop over
    # channel blocks made it buffer every tap's tiles: 9 * 3 stages * 10 KB = 270 KB for a 3x3
    # kernel, over the H100's 227 KB shared-memory limit.
    for t in range(0, tl.cdiv(cin_g, BCI) * (KH * KW)):
        ci = (t // (KH * KW)) * BCI + ci_offs
        kh = (t % (KH * KW)) // KW
        kw = t % KW
        cim = ci < cin_g
        ih = oh * sh - ph + kh * dh
        iw = ow * sw - pw + kw * dw
        m = pm & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_chan = (n[:, None] * C_in + g * cin_g + ci[None, :]) * H  # (BP, BCI)
        a = tl.load(x_ptr + (x_chan + ih[:, None]) * W + iw[:, None], mask=m[:, None] & cim[None, :], other=0.0)
        b = tl.load(w_ptr + ((co[None, :] * cin_g + ci[:, None]) * KH + kh) * KW + kw,
                    mask=cim[:, None] & cm[None, :], other=0.0)  # fmt: skip
        acc += tl.dot(a, b)  # implicit GEMM step: (pixels x in-channels) @ (in-channels x out-channels)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=cm, other=0.0).to(tl.float32)[None, :]
    # out[n, c, oh*R + i, ow*R + j] = conv[n, c*R*R + i*R + j, oh, ow]
    c = co // (R * R)
    i = (co // R) % R
    j = co % R
    dst = ((n[:, None] * (C_out // (R * R)) + c[None, :]) * (OH * R) + oh[:, None] * R + i[None, :]) * (OW * R) \
        + ow[:, None] * R + j[None, :]
    tl.store(y_ptr + dst, acc.to(y_ptr.dtype.element_ty), mask=pm[:, None] & cm[None, :])


def fused_pixel_shuffle_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, upscale_factor=2):
    x = input.contiguous()
    w = weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, cin_g, KH, KW = w.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    cout_g = C_out // groups
    r = int(upscale_factor)
    if C_out % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's channel dimension to be divisible by {r * r}")
    y = torch.empty((N, C_out // (r * r), OH * r, OW * r), dtype=x.dtype, device=x.device)
    if y.numel():
        bp = BP if x.is_cuda else CPU_BP  # the CPU interpreter runs fewer, larger tiles faster
        grid = (triton.cdiv(N * OH * OW, bp), triton.cdiv(cout_g, BC), groups)
        _conv_pixel_shuffle_kernel[grid](
            x, w, bias if bias is not None else w, y, N, C_in, H, W, C_out, OH, OW, cin_g, cout_g,
            sh, sw, ph, pw, dh, dw, R=r, HAS_BIAS=bias is not None, KH=KH, KW=KW, BP=bp, BC=BC, BCI=BCI, num_warps=4,
        )
    return y
