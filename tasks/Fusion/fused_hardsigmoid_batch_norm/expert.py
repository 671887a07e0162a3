"""Expert kernels for Fusion/fused_hardsigmoid_batch_norm.

Training: a stats kernel (one program per channel, two passes over the channel's N * HW elements: mean,
then the sum of squared deviations) writes the batch mean and biased variance and updates running_mean / running_var in
place with the unbiased variance. Eval skips it and reads the running statistics. kbx/experts/batch_norm.py's
normalize kernel then normalizes, applies the optional affine and hardsigmoid in one flat pass over x (the
channel of each element indexes the small per-channel arrays). fp32 math.
"""

import torch
import triton
import triton.language as tl

from kbx.experts.batch_norm import HARDSIGMOID, normalize

BLOCK = 2048
STATS_BLOCK = 4096


@triton.jit
def _channel_stats_kernel(x_ptr, mean_ptr, var_ptr, rm_ptr, rv_ptr, N, C, HW, momentum, UPDATE: tl.constexpr,
                          BLOCK: tl.constexpr):  # fmt: skip
    c = tl.program_id(0).to(tl.int64)
    count = N * HW
    # the channel's elements, enumerated as j = n * HW + s, live at (n * C + c) * HW + s
    acc = tl.zeros([BLOCK], tl.float32)
    for j0 in range(0, count, BLOCK):
        j = j0 + tl.arange(0, BLOCK).to(tl.int64)
        addr = ((j // HW) * C + c) * HW + j % HW
        acc += tl.load(x_ptr + addr, mask=j < count, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / count
    acc2 = tl.zeros([BLOCK], tl.float32)
    for j0 in range(0, count, BLOCK):
        j = j0 + tl.arange(0, BLOCK).to(tl.int64)
        m = j < count
        addr = ((j // HW) * C + c) * HW + j % HW
        d = tl.load(x_ptr + addr, mask=m, other=0.0).to(tl.float32) - mean
        acc2 += tl.where(m, d * d, 0.0)
    m2 = tl.sum(acc2, axis=0)
    tl.store(mean_ptr + c, mean)
    tl.store(var_ptr + c, m2 / count)
    if UPDATE:
        unbiased = m2 / tl.maximum(count - 1, 1).to(tl.float32)
        rm = tl.load(rm_ptr + c).to(tl.float32)
        rv = tl.load(rv_ptr + c).to(tl.float32)
        tl.store(rm_ptr + c, ((1.0 - momentum) * rm + momentum * mean).to(rm_ptr.dtype.element_ty))
        tl.store(rv_ptr + c, ((1.0 - momentum) * rv + momentum * unbiased).to(rv_ptr.dtype.element_ty))


def fused_hardsigmoid_batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                                 eps=1e-05, inplace=False) -> torch.Tensor:  # fmt: skip
    xc = x.contiguous()
    n, c = xc.shape[0], xc.shape[1]
    hw = xc.numel() // (n * c) if n * c else 0
    y = torch.empty_like(xc)
    if training:
        mean = torch.empty(c, dtype=torch.float32, device=x.device)
        var = torch.empty(c, dtype=torch.float32, device=x.device)
        update = running_mean is not None and running_var is not None
        rm = running_mean if update else mean
        rv = running_var if update else var
        _channel_stats_kernel[(c,)](xc, mean, var, rm, rv, n, c, hw, float(momentum), UPDATE=update,
                                    BLOCK=STATS_BLOCK, num_warps=8)  # fmt: skip
    else:
        mean, var = running_mean.contiguous(), running_var.contiguous()
    normalize(xc, mean, var, weight, bias, y, c, hw, eps, HARDSIGMOID, BLOCK, num_warps=8)
    return y
