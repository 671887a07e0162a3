"""Fusion/fused_cos_avg_pool1d: avg_pool1d(cos(input)) over the last dim of an (N, C, L) fp32 tensor.

kbx departure: perf shapes are (32, 32, L) with L = 2^14..2^17 (upstream's largest, L = 2944, is a few
microseconds of work).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, kernel_size: int, stride: int = None, padding: int = 0, ceil_mode: bool = False,
              count_include_pad: bool = True) -> torch.Tensor:  # fmt: skip
    return torch.nn.functional.avg_pool1d(torch.cos(input), kernel_size, stride, padding, ceil_mode, count_include_pad)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("stride", "padding", "ceil_mode", "count_include_pad") if k in params}
    return Call((x, params["k"]), kwargs)


def _out_len(input, kernel_size, stride, padding, ceil_mode):
    s = stride if stride else kernel_size
    span = input.shape[-1] + 2 * padding - kernel_size
    n = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (n - 1) * s >= input.shape[-1] + padding:
        n -= 1
    return n


def _flops(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    lo = _out_len(input, kernel_size, stride, padding, ceil_mode)
    return float(input.numel() + kernel_size * input.shape[0] * input.shape[1] * lo)


def _bytes(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    lo = _out_len(input, kernel_size, stride, padding, ceil_mode)
    return float((input.numel() + input.shape[0] * input.shape[1] * lo) * input.element_size())


_SEQ = [[[0.0, 1.0, 2.0, 3.0, 4.0]]]
_RAND = {"shape": (4, 16, 256), "k": 4, "stride": 2, "padding": 1}

TASK = Task(
    entry="fused_cos_avg_pool1d",
    dtypes=("float32",),
    signature=(
        "fused_cos_avg_pool1d(input: torch.Tensor, kernel_size: int, stride: int | None = None, padding: int = 0, "
        "ceil_mode: bool = False, count_include_pad: bool = True) -> torch.Tensor"
    ),
    description=(
        "Take the elementwise cosine of an (N, C, L) fp32 input, then average-pool along the last dim with "
        "window kernel_size, stride (None means kernel_size) and zero padding `padding` on both ends. The output "
        "length rounds down, or up with ceil_mode=True (a window must start inside the input or left padding). "
        "With count_include_pad=True a window divides by the number of its positions inside input plus padding, "
        "otherwise by the number inside the input. Return the (N, C, L_out) result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_k2", FIXED, {"values": _SEQ, "k": 2}),
        Case("fixed_k2_s1", FIXED, {"values": _SEQ, "k": 2, "stride": 1}),
        Case("fixed_k2_p1", FIXED, {"values": _SEQ, "k": 2, "padding": 1}),
        Case("fixed_k2_ceil", FIXED, {"values": _SEQ, "k": 2, "ceil_mode": True}),
        Case("fixed_k3_p1_ceil_nopad", FIXED, {"values": _SEQ, "k": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                               "count_include_pad": False}),  # fmt: skip
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
        Case("standard_ceil_nopad", STANDARD, {"shape": (2, 8, 101), "k": 4, "stride": 3, "padding": 2,
                                               "ceil_mode": True, "count_include_pad": False,
                                               "mode": "standard"}),  # fmt: skip
    ],
    perf=[Case(f"L2^{e}", PERF, {"shape": (32, 32, 2**e), "k": 3, "mode": "uniform"}) for e in (14, 15, 16, 17)],
    flops=_flops,
    bytes=_bytes,
    notes="perf lengths 2^14..2^17 instead of upstream's <= 2944.",
)
