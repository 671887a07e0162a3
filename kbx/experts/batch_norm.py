"""Batch normalization's kernels that the expert solutions of `Fusion/fused_relu_batch_norm_conv2d`,
`Fusion/fused_sigmoid_batch_norm` and `Fusion/fused_hardsigmoid_batch_norm` share (each expert imports them).

Training: each program takes a block of channels and computes their batch mean and biased variance over
(N, L) in two chunked passes (mean first, then squared deviations, for accuracy), and updates the running
statistics in place with the unbiased variance. Then one elementwise pass normalizes with the chosen
statistics, applies the optional affine map and the activation. fp32 math.
"""

import torch
import triton
import triton.language as tl

BR, BC = 128, 32  # stats tile: positions x channels
RELU, SIGMOID, HARDSIGMOID = 0, 1, 2  # normalize_kernel's ACT


@triton.jit
def channel_stats_kernel(x_ptr, mean_ptr, var_ptr, rm_ptr, rv_ptr, N, C, L, momentum,
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
def normalize_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, y_ptr, total, C, L, eps,
                     HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACT: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    c = (offs // L) % C  # per-channel parameters are tiny and stay cached
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + c, mask=m, other=0.0).to(tl.float32)
    var = tl.load(var_ptr + c, mask=m, other=1.0).to(tl.float32)
    v = (x - mean) / tl.sqrt(var + eps)
    if HAS_W:
        v = v * tl.load(w_ptr + c, mask=m, other=1.0).to(tl.float32)
    if HAS_B:
        v = v + tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
    if ACT == 0:  # RELU
        y = tl.maximum(v, 0.0)
    elif ACT == 1:  # SIGMOID
        y = 1.0 / (1.0 + tl.exp(-v))
    else:  # HARDSIGMOID
        y = tl.minimum(tl.maximum(v / 6.0 + 0.5, 0.0), 1.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


def batch_statistics(x: torch.Tensor, N: int, C: int, L: int, running_mean, running_var, momentum):
    """(mean, biased variance) per channel of contiguous x (N, C, L...), fp32; the running statistics, when
    both are given, are updated in place."""
    if N * L <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(x.shape)}")
    mean = torch.empty(C, dtype=torch.float32, device=x.device)
    var = torch.empty(C, dtype=torch.float32, device=x.device)
    update = running_mean is not None and running_var is not None
    channel_stats_kernel[(triton.cdiv(C, BC),)](
        x, mean, var, running_mean if update else mean, running_var if update else var, N, C, L,
        float(momentum if momentum is not None else 0.0), UPDATE=update, BR=BR, BC=BC, num_warps=4,
    )  # fmt: skip
    return mean, var


def normalize(x, mean, var, weight, bias, y, C: int, L: int, eps: float, act: int, block: int, num_warps: int):
    """y = act((x - mean) / sqrt(var + eps) * weight + bias), per channel, in one flat pass."""
    total = x.numel()
    if total:
        normalize_kernel[(triton.cdiv(total, block),)](
            x, mean, var, weight if weight is not None else x, bias if bias is not None else x, y, total, C, L,
            float(eps), HAS_W=weight is not None, HAS_B=bias is not None, ACT=act, BLOCK=block, num_warps=num_warps,
        )  # fmt: skip
