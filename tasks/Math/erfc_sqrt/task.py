"""Math/erfc_sqrt: the pair (erfc(x), sqrt(x)) elementwise in fp32; sqrt of a negative is NaN."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.erfc(input), torch.sqrt(input)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        x = x + params["shift"] if "shift" in params else x.abs()
    return Call((x,))


def _flops(input):
    return 2.0 * input.numel()


def _bytes(input):
    return 3.0 * input.numel() * input.element_size()


TASK = Task(
    entry="erfc_sqrt",
    dtypes=("float32",),
    signature="erfc_sqrt(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]",
    description=(
        "Return a tuple of two new fp32 tensors of the input's shape: erfc(x) = 1 - erf(x) (computed accurately "
        "for large x) and sqrt(x), elementwise; sqrt of a negative x is NaN."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_positive", FIXED, {"values": [0.0, 1.0, 2.0]}),
        Case("fixed_negative", FIXED, {"values": [-1.0, -2.0, -3.0]}),
        Case("fixed_mixed", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0]}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "shift": 1e-6}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="byte model is the minimum traffic (one read, two writes), not upstream's 4 * n * 4.",
)
