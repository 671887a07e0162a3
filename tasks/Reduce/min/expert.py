"""Expert kernel for Reduce/min: kbx.experts.argreduce's split (value, index) reduction over the reduced dim.

Smaller value wins, NaN beats every number (torch.min propagates NaN), and equal values keep the
smaller index.
"""

import torch

from kbx.experts.argreduce import accumulated, reduce_best


def min(input_tensor: torch.Tensor, dim: int, keepdim: bool = False):
    x = input_tensor
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    d = dim % x.dim()
    R = x.shape[d]
    if R == 0:
        raise IndexError("min(): Expected reduction dim to be specified for input.numel() == 0.")
    outer = 1
    for s in x.shape[:d]:
        outer *= s
    inner = x.numel() // (outer * R) if outer * R else 0
    out_shape = [1 if i == d else s for i, s in enumerate(x.shape)] if keepdim else [s for i, s in enumerate(x.shape) if i != d]
    if x.numel() == 0:
        return (torch.empty(out_shape, dtype=x.dtype, device=x.device),
                torch.empty(out_shape, dtype=torch.int64, device=x.device))  # fmt: skip
    xc, acc_torch, acc_tl = accumulated(x.contiguous())
    vals, inds = reduce_best(xc, None, outer, R, inner, False, acc_torch, acc_tl)
    return vals.to(x.dtype).reshape(out_shape), inds.reshape(out_shape)
