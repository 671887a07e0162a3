"""Expert kernels for Fusion/fused_relu_batch_norm_conv2d.

1. The implicit-GEMM convolution of kbx/experts/conv.py (an NHWC copy of the input, tl.dot per kernel tap, fp32
   accumulation) with the bias.
2. In training, each program takes a block of channels and computes their batch mean and biased
   variance over (N, H, W) in two chunked passes, and updates the running statistics in place.
3. One elementwise pass normalizes with the chosen statistics, applies the affine map and ReLU.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.234 / 2.63 / 40.8 ms at i = 2 /
3 / 4 against eager's 0.202 / 1.95 / 28.1 ms (cuDNN's TF32 convolution, then batch_norm and relu), 0.76x; its own
NCHW convolution kernel gave 0.18x.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.conv import conv2d, conv_shape

BR, BCH = 128, 32  # stats tile: positions x channels
BLOCK = 4096


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
    shape = conv_shape(input, weight, stride, padding, dilation, groups, "fused_relu_batch_norm_conv2d")
    N, C_out, L = shape.N, shape.Cout, shape.Hout * shape.Wout
    if N * C_out == 0:
        return torch.empty((N, C_out, shape.Hout, shape.Wout), dtype=input.dtype, device=input.device)
    y = conv2d(input, weight, bias, stride, padding, dilation, groups)
    if training:
        if N * L <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(y.shape)}")
        mean = torch.empty(C_out, dtype=torch.float32, device=y.device)
        var = torch.empty(C_out, dtype=torch.float32, device=y.device)
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
