"""Pooling/adaptive_avg_pool2d: adaptive 2-D average pooling of fp32 (N, C, H, W) or (C, H, W) input.

kbx adds standard/outlier cases with uneven, overlapping windows (upstream had four randn cases and
no random-mode keys) and a window-free identity case. Perf inputs are (1, 3, H, H) with H = 2^11..2^13
pooled to H/2 (upstream timed sizes from 2^8, mostly tiny).
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(input: torch.Tensor, output_size) -> torch.Tensor:
    return torch.nn.functional.adaptive_avg_pool2d(input, output_size)


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    size = params["output_size"]
    return Call((x, size if isinstance(size, int) else tuple(size)))


def _out_hw(output_size):
    return (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)


def _flops(input, output_size):
    return float(input.numel())


def _bytes(input, output_size):
    oh, ow = _out_hw(output_size)
    planes = input.numel() // (input.shape[-1] * input.shape[-2])
    return float((input.numel() + planes * oh * ow) * input.element_size())


def _case(name, kind, shape, size, mode="standard"):
    return Case(name, kind, {"shape": shape, "output_size": size, "mode": mode})


TASK = Task(
    entry="adaptive_avg_pool2d",
    dtypes=("float32",),
    signature="adaptive_avg_pool2d(input: torch.Tensor, output_size: int | tuple[int, int]) -> torch.Tensor",
    description=(
        "Adaptive 2-D average pooling as torch.nn.functional.adaptive_avg_pool2d on fp32 input (N, C, H, W) or "
        "(C, H, W); an int output_size means (s, s). Output cell (i, j) of an (oh, ow) output is the mean of "
        "input rows floor(i*H/oh) .. ceil((i+1)*H/oh)-1 and columns floor(j*W/ow) .. ceil((j+1)*W/ow)-1 "
        "(windows may differ in size and overlap). Returns fp32 of shape (..., oh, ow)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("nchw_square5", STANDARD, (1, 64, 8, 9), 5),
        _case("nchw_5x7", STANDARD, (1, 64, 8, 9), (5, 7)),
        _case("chw_square5", STANDARD, (64, 8, 9), 5),
        _case("chw_5x7", STANDARD, (64, 8, 9), (5, 7)),
        _case("identity_size", STANDARD, (2, 3, 6, 7), (6, 7)),
        _case("standard_upsample_rows", STANDARD, (2, 16, 13, 31), (17, 4)),
        _case("outlier_uneven", OUTLIER, (2, 16, 31, 29), (7, 6), "outlier"),
    ],
    perf=[_case(f"h2^{e}", PERF, (1, 3, 2**e, 2**e), (2 ** (e - 1), 2 ** (e - 1)), "uniform") for e in (11, 12, 13)],
    flops=_flops,
    bytes=_bytes,
    notes="adds standard/outlier uneven-window cases; perf (1, 3, 2^11..2^13 squared)",
)
