"""Fusion/fused_cos_signbit: elementwise cosine and the sign bit of that cosine, fp32 in, (fp32, bool) out."""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    c = torch.cos(input)
    return c, torch.signbit(c)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        return Call((literal(params["values"], "float32", device),))
    return Call((rand_tensor(params["shape"], "float32", params["mode"], gen, device),))


def _flops(input):
    return 9.0 * input.numel()


def _bytes(input):
    return float(input.numel() * (2 * input.element_size() + 1))


TASK = Task(
    entry="fused_cos_signbit",
    dtypes=("float32", "bool"),
    signature="fused_cos_signbit(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]",
    description=(
        "Compute c = cos(input) elementwise for an fp32 tensor and s = signbit(c), a bool tensor that is True "
        "where c's sign bit is set (negative values and -0.0). Return the tuple (c, s), both of the input's shape."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_pos", FIXED, {"values": [0.0, 1.0, 2.0]}),
        Case("fixed_neg", FIXED, {"values": [-1.0, -2.0, -3.0]}),
        Case("fixed_mixed", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_pi", FIXED, {"values": [math.pi, -math.pi, 2 * math.pi]}),
        Case("standard", STANDARD, {"shape": (4096,), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (4096,), "mode": "outlier"}),
        Case("standard_2d", STANDARD, {"shape": (333, 77), "mode": "standard"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
