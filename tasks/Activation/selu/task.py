"""Activation/selu: upstream's SELU variant scale * (max(x, 0) + min(x, alpha * (exp(x) - 1))) in fp32.

Note: this is upstream's formula (min against x, not against 0), not torch.nn.functional.selu; kbx keeps it.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor

ALPHA = 1.6732632423543772
SCALE = 1.0507009873554805


def reference(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return SCALE * (torch.clamp(input, min=0.0) + torch.minimum(input, ALPHA * (torch.exp(input) - 1.0)))


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device, outlier_scale=20.0)
    kwargs = {"inplace": True} if params.get("inplace") else {}
    return Call((x,), kwargs)


def _flops(input, inplace=False):
    return 7.0 * input.numel()


def _bytes(input, inplace=False):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="selu",
    dtypes=("float32",),
    signature="selu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor",
    description=(
        "With alpha = 1.6732632423543772 and scale = 1.0507009873554805, return "
        "scale * (max(x, 0) + min(x, alpha * (exp(x) - 1))) elementwise as a new fp32 tensor of the input's shape "
        "(note: min against x, not against 0, so positive x gives 2 * scale * x and very negative x gives scale * x). "
        "`inplace` is accepted but ignored: `input` must not change."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_positive", FIXED, {"values": [1.0, 2.0, 3.0]}),
        Case("fixed_negative", FIXED, {"values": [-1.0, -2.0, -3.0]}),
        Case("fixed_mixed", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0]}),
        Case("fixed_inplace_ignored", FIXED, {"values": [-1.5, -1.0, 0.5], "inplace": True}),
        Case("standard", STANDARD, {"shape": (512, 512), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (512, 512), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="byte model is the minimum traffic (read + write), not upstream's 7 * n * 4.",
)
