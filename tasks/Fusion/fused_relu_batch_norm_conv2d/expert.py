"""Expert kernels for Fusion/fused_relu_batch_norm_conv2d.

1. An implicit-GEMM convolution (tl.dot per kernel tap, fp32 accumulation) with the bias.
2. In training, each program takes a block of channels and computes their batch mean and biased
   variance over (N, H, W) in two chunked passes, and updates the running statistics in place.
3. One elementwise pass normalizes with the chosen statistics, applies the affine map and ReLU.

Speed: on an H100 (2026-11-27, docs/BENCHMARKS.md), 0.798 / 12.0 / 186 ms at i = 2 / 3 / 4 against eager's
0.221 / 2.11 / 28.1 ms (cuDNN's TF32 convolution, then batch_norm and relu), 0.194x. At i4 the expert is at 79% of
the fp32 roofline and eager at 525%, i.e. 10.7% and 71% of the TF32 peak. The conv tile is 128x32 with a K step of
16 channels, read from the NCHW input and (C_out, C_in, 3, 3) weights, so neither tl.dot operand is contiguous
along the reduction; the eval-mode BN pass moves 4.3 GB at i4, 1.3 ms at peak bandwidth (derived, not timed).
Convolution/conv2d's NHWC copies and 128x256x32 tiles (15% of the TF32 peak there) would be the first step.
"""

import torch
import triton
import triton.language as tl

BP, BC, BCI = 128, 32, 16  # conv tile: output pixels x output channels x input-channel step
CPU_BP = 1024
BR, BCH = 128, 32  # stats tile: positions x channels
BLOCK = 4096


def _pair(v):
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


@triton.jit
def _conv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, C_in, H, W, C_out, OH, OW, cin_g, cout_g,
                      sh, sw, ph, pw, dh, dw,
                      HAS_BIAS: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
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
    dst = ((n[:, None] * C_out + co[None, :]) * OH + oh[:, None]) * OW + ow[:, None]
    tl.store(y_ptr + dst, acc.to(y_ptr.dtype.element_ty), mask=pm[:, None] & cm[None, :])


@triton.jit
def _channel_stats_kernel(x_ptr, mean_ptr, var_ptr, rm_ptr, rv_ptr, N, C, L, momentum,
                          UPDATE: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    # a (BR samples, BC channels) tile walks over the N * L positions of BC channels at once
    ch = tl.program_id(0).to(tl.int64) * BC + tl.arange(0, BC)
    cm = ch < C
    count = N * L
    offs = tl.arange(0, BR).to(tl.int64)
    acc = tl.zeros((BR, BC), dtype=tl.float32)
    for start in range(0, count, BR):
        j = start + offs
        n = j // L
        l = j % L
        m = (j < count)[:, None] & cm[None, :]
        acc += tl.load(x_ptr + (n * C * L + l)[:, None] + ch[None, :] * L, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / count
    acc2 = tl.zeros((BR, BC), dtype=tl.float32)
    for start in range(0, count, BR):
        j = start + offs
        n = j // L
        l = j % L
        m = (j < count)[:, None] & cm[None, :]
        x = tl.load(x_ptr + (n * C * L + l)[:, None] + ch[None, :] * L, mask=m, other=0.0).to(tl.float32)
        d = tl.where(m, x - mean[None, :], 0.0)
        acc2 += d * d
    ssd = tl.sum(acc2, axis=0)
    tl.store(mean_ptr + ch, mean, mask=cm)
    tl.store(var_ptr + ch, ssd / count, mask=cm)
    if UPDATE:
        rm = tl.load(rm_ptr + ch, mask=cm, other=0.0).to(tl.float32)
        rv = tl.load(rv_ptr + ch, mask=cm, other=0.0).to(tl.float32)
        tl.store(rm_ptr + ch, (1.0 - momentum) * rm + momentum * mean, mask=cm)
        tl.store(rv_ptr + ch, (1.0 - momentum) * rv + momentum * (ssd / (count - 1)), mask=cm)


@triton.jit
def _apply_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, y_ptr, total, C, L, eps,
                  HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    c = (offs // L) % C
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + c, mask=m, other=0.0).to(tl.float32)
    var = tl.load(var_ptr + c, mask=m, other=1.0).to(tl.float32)
    v = (x - mean) / tl.sqrt(var + eps)
    if HAS_W:
        v = v * tl.load(w_ptr + c, mask=m, other=1.0).to(tl.float32)
    if HAS_B:
        v = v + tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
    y = tl.maximum(v, 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


def fused_relu_batch_norm_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                                 running_mean=None, running_var=None, bn_weight=None, bn_bias=None, training=False,
                                 momentum=0.1, eps=1e-05, inplace=False):  # fmt: skip
    x = input.contiguous()
    w = weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, cin_g, KH, KW = w.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    cout_g = C_out // groups
    y = torch.empty((N, C_out, OH, OW), dtype=x.dtype, device=x.device)
    if y.numel() == 0:
        return y
    bp = BP if x.is_cuda else CPU_BP  # the CPU interpreter runs fewer, larger tiles faster
    grid = (triton.cdiv(N * OH * OW, bp), triton.cdiv(cout_g, BC), groups)
    _conv_kernel[grid](
        x, w, bias if bias is not None else w, y, N, C_in, H, W, C_out, OH, OW, cin_g, cout_g,
        sh, sw, ph, pw, dh, dw, HAS_BIAS=bias is not None, KH=KH, KW=KW, BP=bp, BC=BC, BCI=BCI, num_warps=4,
    )
    L = OH * OW
    if training:
        if N * L <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(y.shape)}")
        mean = torch.empty(C_out, dtype=torch.float32, device=x.device)
        var = torch.empty(C_out, dtype=torch.float32, device=x.device)
        update = running_mean is not None and running_var is not None
        _channel_stats_kernel[(triton.cdiv(C_out, BCH),)](
            y, mean, var, running_mean if update else mean, running_var if update else var, N, C_out, L,
            float(momentum if momentum is not None else 0.0), UPDATE=update, BR=BR, BC=BCH, num_warps=4,
        )
    else:
        mean, var = running_mean, running_var
    total = y.numel()
    _apply_kernel[(triton.cdiv(total, BLOCK),)](
        y, mean, var, bn_weight if bn_weight is not None else y, bn_bias if bn_bias is not None else y, y, total,
        C_out, L, float(eps), HAS_W=bn_weight is not None, HAS_B=bn_bias is not None, BLOCK=BLOCK, num_warps=4,
    )
    return y
