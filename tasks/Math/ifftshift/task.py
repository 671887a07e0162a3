"""Math/ifftshift: inverse FFT shift, rolling each selected dimension by -(size // 2); pure data movement."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, dim: int | tuple[int, ...] | None = None) -> torch.Tensor:
    return torch.fft.ifftshift(input, dim=dim)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], params.get("dtype", "int64"), device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"dim": params["dim"]} if "dim" in params else {}
    return Call((x,), kwargs)


def _flops(input, dim=None):
    return float(input.numel())


def _bytes(input, dim=None):
    return 2.0 * input.numel() * input.element_size()


_SQ3 = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]

TASK = Task(
    entry="ifftshift",
    dtypes=("int64", "float32"),
    signature="ifftshift(input: torch.Tensor, dim: int | tuple[int, ...] | None = None) -> torch.Tensor",
    description=(
        "Return a new tensor equal to `input` circularly rolled by -(n // 2) along each selected dimension, "
        "where n is that dimension's size (the inverse of fftshift; it differs from fftshift for odd n). "
        "dim=None selects every dimension; otherwise dim is one int or a tuple of ints (negative counts from "
        "the end). Shape and dtype are preserved; values are moved, never changed."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_1d", FIXED, {"values": list(range(8))}),
        Case("fixed_3x3", FIXED, {"values": _SQ3}),
        Case("fixed_3x3_dim0", FIXED, {"values": _SQ3, "dim": 0}),
        Case("fixed_2x2x2_dims12", FIXED, {"values": [[[0, 1], [2, 3]], [[4, 5], [6, 7]]], "dim": (1, 2)}),
        Case("fixed_odd_float_neg", FIXED, {"values": [[0.0, 1.0, 2.0, 3.0, 4.0]] * 2, "dtype": "float32", "dim": -1}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("standard_dim0", STANDARD, {"shape": (64, 64), "mode": "standard", "dim": 0}),
        Case("standard_odd_3d", STANDARD, {"shape": (5, 33, 7), "mode": "standard", "dim": (0, 2)}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "dim": (0, 1)}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
