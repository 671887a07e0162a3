"""Expert kernel for Fusion/fused_hstack_div: each input is divided and written straight into its column
slice of the stacked output, so the concatenated tensor is never materialised.

Every input is seen as a (rows, width_i) matrix (rows = size of dim 0, the remaining dims flattened; a 1-D
input is one row) and the output as (rows, sum of widths). One launch per input; math in fp32 (fp64 for
fp64 or integer results).
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048
MODES = {None: 0, "trunc": 1, "floor": 2}


@triton.jit(do_not_specialize=["divisor"])  # an int divisor of 1 would otherwise become a constexpr without .to()
def _div_into_slice_kernel(x_ptr, y_ptr, n, width, out_width, col_off, divisor, MODE: tl.constexpr,
                           WIDE: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if WIDE:
        q = x.to(tl.float64) / divisor.to(tl.float64)
    else:
        q = x.to(tl.float32) / divisor
    if MODE == 1:
        q = tl.where(q < 0, tl.ceil(q), tl.floor(q))
    elif MODE == 2:
        q = tl.floor(q)
    row = offs // width
    col = offs - row * width
    tl.store(y_ptr + row * out_width + col_off + col, q.to(y_ptr.dtype.element_ty), mask=mask)


def _result_dtype(cat_dtype, divisor, rounding_mode):
    if rounding_mode is None and not cat_dtype.is_floating_point:
        return torch.get_default_dtype()
    return torch.result_type(torch.empty((), dtype=cat_dtype), divisor)


def fused_hstack_div(tensors, divisor, *, rounding_mode=None, out=None) -> torch.Tensor:
    if rounding_mode not in MODES:
        raise ValueError(f"rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    ts = [t.contiguous() for t in tensors]
    cat_dtype = ts[0].dtype
    for t in ts[1:]:
        cat_dtype = torch.promote_types(cat_dtype, t.dtype)
    dtype = _result_dtype(cat_dtype, divisor, rounding_mode)
    one_d = ts[0].dim() == 1
    if one_d:
        rows, widths = 1, [t.numel() for t in ts]
        out_shape = [sum(widths)]
    else:
        rows = ts[0].shape[0]
        widths = [t.numel() // rows if rows else 0 for t in ts]
        out_shape = [rows, sum(t.shape[1] for t in ts), *ts[0].shape[2:]]
    y = torch.empty(out_shape, dtype=dtype, device=ts[0].device)
    out_width = sum(widths)
    wide = dtype == torch.float64 or not dtype.is_floating_point
    col_off = 0
    for t, w in zip(ts, widths, strict=True):
        n = t.numel()
        if n:
            _div_into_slice_kernel[(triton.cdiv(n, BLOCK),)](t, y, n, w, out_width, col_off, float(divisor),
                                                             MODE=MODES[rounding_mode], WIDE=wide, BLOCK=BLOCK,
                                                             num_warps=8)  # fmt: skip
        col_off += w
    if out is not None:
        out.copy_(y)
        return out
    return y
