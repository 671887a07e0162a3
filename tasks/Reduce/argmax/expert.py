"""Expert kernel for Reduce/argmax: kbx.experts.argreduce's split (value, index) reduction over the reduced dim.

Values are negated on load so one "smaller wins" rule serves: NaN beats every number, equal values
keep the smaller index.
"""

import torch

from kbx.experts.argreduce import accumulated, reduce_best


def argmax(input_tensor: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    x = input_tensor
    if x.dim() == 0:
        return torch.zeros((), dtype=torch.int64, device=x.device)
    d = dim % x.dim()
    R = x.shape[d]
    if R == 0:
        raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
    outer = 1
    for s in x.shape[:d]:
        outer *= s
    inner = x.numel() // (outer * R) if outer * R else 0
    out_shape = [1 if i == d else s for i, s in enumerate(x.shape)] if keepdim else [s for i, s in enumerate(x.shape) if i != d]
    if x.numel() == 0:
        return torch.empty(out_shape, dtype=torch.int64, device=x.device)
    x, acc_torch, acc_tl = accumulated(x.contiguous())
    _, inds = reduce_best(x, None, outer, R, inner, True, acc_torch, acc_tl)
    return inds.reshape(out_shape)
