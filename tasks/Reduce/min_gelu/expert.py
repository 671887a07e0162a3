"""Expert kernel for Reduce/min_gelu: the GELU-like transform fused into kbx.experts.argreduce's split
(value, index) min reduction.

The transform (approximate='none': x * erf(x / sqrt(2)) / 2, upstream's form without "1 +"; 'tanh': the
tanh GELU) is applied in fp32 right after each load. Smaller value wins, NaN beats every number (as
torch.min), and equal values keep the smaller index.
"""

import torch
import triton.language as tl

from kbx.experts.argreduce import GELU_ERF, GELU_TANH, reduce_best


def min_gelu(input, dim=None, keepdim=False, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Invalid value for approximate: {approximate}. Choose 'none' or 'tanh'.")
    mode = GELU_ERF if approximate == "none" else GELU_TANH
    x = input.contiguous()
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0.")
        vals, _ = reduce_best(x.reshape(-1), None, 1, x.numel(), 1, False, torch.float32, tl.float32, mode)
        return vals.to(input.dtype).reshape(())
    d = dim % max(x.dim(), 1)
    R = x.shape[d] if x.dim() else 1
    outer = 1
    for s in x.shape[:d]:
        outer *= s
    inner = x.numel() // max(outer * R, 1)
    out_shape = [1 if i == d else s for i, s in enumerate(x.shape)] if keepdim else [s for i, s in enumerate(x.shape) if i != d]
    vals, inds = reduce_best(x, None, outer, R, inner, False, torch.float32, tl.float32, mode)
    return vals.to(input.dtype).reshape(out_shape), inds.reshape(out_shape)
