"""Pooling/avg_pool1d: 1-D average pooling over the last dimension, zero padding counted in the divisor.

Upstream has only three randn cases and no random-mode keys; kbx adds a literal case and
standard/outlier cases with a longer sequence.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, kernel_size: int, stride: int | None = None, padding: int = 0) -> torch.Tensor:
    return torch.nn.functional.avg_pool1d(input, kernel_size, stride=stride, padding=padding)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x, params["kernel_size"]), {"stride": params.get("stride"), "padding": params.get("padding", 0)})


def _out_len(length, kernel_size, stride, padding):
    stride = kernel_size if stride is None else stride
    return (length + 2 * padding - kernel_size) // stride + 1


def _flops(input, kernel_size, stride=None, padding=0):
    rows = input.numel() // input.shape[-1]
    return float(rows * _out_len(input.shape[-1], kernel_size, stride, padding) * kernel_size)


def _bytes(input, kernel_size, stride=None, padding=0):
    rows = input.numel() // input.shape[-1]
    out = rows * _out_len(input.shape[-1], kernel_size, stride, padding)
    return float(input.numel() + out) * input.element_size()


def _pool(kernel_size, stride=None, padding=0):
    return {"kernel_size": kernel_size, "stride": stride, "padding": padding}


def _case(name, kind, shape, mode, kernel_size, stride=None, padding=0):
    return Case(name, kind, {"shape": shape, "mode": mode, **_pool(kernel_size, stride, padding)})


TASK = Task(
    entry="avg_pool1d",
    dtypes=("float32",),
    signature=(
        "avg_pool1d(input: torch.Tensor, kernel_size: int, stride: int | None = None, padding: int = 0) "
        "-> torch.Tensor"
    ),
    description=(
        "Average-pool a (N, C, L) fp32 tensor along its last dimension: stride defaults to kernel_size, "
        "the sequence is zero-padded by `padding` on both ends, and output position j is the sum of "
        "padded[j*stride : j*stride + kernel_size] divided by kernel_size (padding zeros count in the "
        "divisor). The output length is floor((L + 2*padding - kernel_size) / stride) + 1."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_k2", FIXED, {"values": [[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]], "kernel_size": 2}),
        Case("fixed_k3_s1_p1", FIXED, {"values": [[[1.0, -2.0, 4.0, 8.0, -16.0]]], **_pool(3, 1, 1)}),
        _case("k2", STANDARD, (2, 4, 16), "standard", 2),
        _case("k4_s2", STANDARD, (2, 4, 32), "standard", 4, 2),
        _case("k3_s1_p1", STANDARD, (2, 4, 16), "standard", 3, 1, 1),
        _case("standard_k5_s3_p2", STANDARD, (4, 16, 1001), "standard", 5, 3, 2),
        _case("outlier_k3_p1", OUTLIER, (4, 16, 1000), "outlier", 3, None, 1),
    ],
    # upstream's layout (2, 64, L) with kernel 2, lengthened so the reference is not launch-bound
    perf=[
        _case(f"L2^{e}", PERF, (2, 64, 2**e), "uniform", 2) for e in (18, 19, 20, 21)
    ],
    flops=_flops,
    bytes=_bytes,
)
