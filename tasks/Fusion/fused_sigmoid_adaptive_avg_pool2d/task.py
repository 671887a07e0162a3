"""Fusion/fused_sigmoid_adaptive_avg_pool2d: adaptive 2-D average pooling followed by sigmoid, NCHW fp32.

Upstream's fixed cases drew their inputs with torch.randn; here they are seeded draws of the same shapes.
kbx adds an uneven case (15x22 to 4x7) where windows overlap and differ in size; since version 2 it is an
extra case (upstream's sizes all divide evenly: reported, never deciding the verdict).
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(input, output_size) -> torch.Tensor:
    return torch.sigmoid(torch.nn.functional.adaptive_avg_pool2d(input, output_size))


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    out = params["output_size"]
    return Call((x, tuple(out) if isinstance(out, list) else out))


def _out_hw(input, output_size):
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    oh = input.shape[-2] if output_size[0] is None else output_size[0]
    ow = input.shape[-1] if output_size[1] is None else output_size[1]
    return oh, ow


def _flops(input, output_size):
    oh, ow = _out_hw(input, output_size)
    return float(input.numel() + 4 * input.shape[0] * input.shape[1] * oh * ow)


def _bytes(input, output_size):
    oh, ow = _out_hw(input, output_size)
    return float((input.numel() + input.shape[0] * input.shape[1] * oh * ow) * input.element_size())


TASK = Task(
    entry="fused_sigmoid_adaptive_avg_pool2d",
    dtypes=("float32",),
    signature=(
        "fused_sigmoid_adaptive_avg_pool2d(input: torch.Tensor, output_size: int | tuple[int, int]) "
        "-> torch.Tensor"
    ),
    description=(
        "For an (N, C, H, W) fp32 input, apply adaptive average pooling to (oh, ow) = output_size (an int means "
        "square): output cell (i, j) is the mean of input rows floor(i*H/oh) to ceil((i+1)*H/oh) - 1 and "
        "columns floor(j*W/ow) to ceil((j+1)*W/ow) - 1 (windows may overlap or differ in size). Then apply "
        "sigmoid and return the (N, C, oh, ow) result."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_8to4", STANDARD, {"shape": (1, 3, 8, 8), "mode": "standard", "output_size": 4}),
        Case("small_10to5", STANDARD, {"shape": (2, 3, 10, 10), "mode": "standard", "output_size": (5, 5)}),
        Case("small_16to8", STANDARD, {"shape": (4, 3, 16, 16), "mode": "standard", "output_size": (8, 8)}),
        Case("small_12to6", STANDARD, {"shape": (1, 1, 12, 12), "mode": "standard", "output_size": (6, 6)}),
        Case("standard_to4", STANDARD, {"shape": (4, 8, 32, 32), "mode": "standard", "output_size": 4}),
        Case("standard_to8", STANDARD, {"shape": (4, 8, 32, 32), "mode": "standard", "output_size": (8, 8)}),
        Case("standard_global", STANDARD, {"shape": (4, 8, 32, 32), "mode": "standard", "output_size": (1, 1)}),
        Case("standard_uneven", STANDARD, {"shape": (2, 3, 15, 22), "mode": "standard", "output_size": (4, 7)},
             extra=True),  # fmt: skip
        Case("outlier_to4", OUTLIER, {"shape": (4, 8, 32, 32), "mode": "outlier", "output_size": 4}),
        Case("outlier_to8", OUTLIER, {"shape": (4, 8, 32, 32), "mode": "outlier", "output_size": (8, 8)}),
        Case("outlier_global", OUTLIER, {"shape": (4, 8, 32, 32), "mode": "outlier", "output_size": (1, 1)}),
    ],
    perf=[
        Case("4x4x1024x1024", PERF, {"shape": (4, 4, 1024, 1024), "mode": "uniform", "output_size": (1, 1)}),
        Case("8x4x1024x1024", PERF, {"shape": (8, 4, 1024, 1024), "mode": "uniform", "output_size": (1, 1)}),
        Case("8x8x1024x1024", PERF, {"shape": (8, 8, 1024, 1024), "mode": "uniform", "output_size": (1, 1)}),
        Case("8x8x2048x2048", PERF, {"shape": (8, 8, 2048, 2048), "mode": "uniform", "output_size": (1, 1)}),
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # standard_uneven became extra
    notes="upstream's fixed cases drew their inputs with torch.randn; here they are seeded draws of the same shapes.",
)
