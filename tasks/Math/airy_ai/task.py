"""Math/airy_ai: the Airy function Ai(x) elementwise in fp32 (`out` accepted and ignored, as upstream)."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.special.airy_ai(input)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x,))


def _flops(input, out=None):
    return 50.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="airy_ai",
    dtypes=("float32",),
    signature="airy_ai(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return Ai(x), the Airy function of the first kind (the solution of y'' = x y that decays for x -> +inf; "
        "it oscillates for x < 0), elementwise as a new fp32 tensor of the input's shape. The `out` argument is "
        "accepted but ignored: always return a new tensor and leave `out` untouched."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_one", FIXED, {"values": [1.0]}),
        Case("fixed_minus_one", FIXED, {"values": [-1.0]}),
        Case("fixed_small", FIXED, {"values": [0.0, 1.0, -1.0]}),
        Case("fixed_far", FIXED, {"values": [10.0, -10.0]}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard"}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
