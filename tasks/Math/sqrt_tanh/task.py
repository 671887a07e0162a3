"""Math/sqrt_tanh: tanh(sqrt(x)) elementwise in fp32 (NaN for x < 0; `out` accepted and ignored, as upstream).

kbx departure: upstream's all-negative fixed case (an all-NaN output) gains a 0.25, since kbx rejects
references whose output is entirely NaN. Byte model: minimum traffic (read + write).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.tanh(torch.sqrt(input))


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "abs_plus" in params:
        x = x.abs() + params["abs_plus"]
    return Call((x,))


def _flops(input, out=None):
    return 2.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="sqrt_tanh",
    dtypes=("float32",),
    signature="sqrt_tanh(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return tanh(sqrt(x)) elementwise as a new fp32 tensor of the input's shape; negative x gives NaN. "
        "The `out` argument is accepted but ignored: always return a new tensor and leave `out` untouched."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_squares", FIXED, {"values": [4.0, 9.0, 16.0]}),
        Case("fixed_negative", FIXED, {"values": [-4.0, -9.0, -16.0, 0.25]}),
        Case("fixed_mixed", FIXED, {"values": [4.0, -9.0, 16.0, -1.0]}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0]}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "abs_plus": 0.0}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "abs_plus": 0.0}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="all-NaN fixed case extended with 0.25; byte model is the minimum traffic (read + write).",
)
