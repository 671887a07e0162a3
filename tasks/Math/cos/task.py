"""Math/cos: elementwise cosine of an fp32 tensor."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.cos(input_tensor)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    elif "linspace" in params:
        x = torch.linspace(*params["linspace"], dtype=torch.float32, device=device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x,))


def _flops(input_tensor):
    return 1.0 * input_tensor.numel()


def _bytes(input_tensor):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="cos",
    dtypes=("float32",),
    signature="cos(input_tensor: torch.Tensor) -> torch.Tensor",
    description=(
        "Return cos(x) (x in radians) elementwise as a new fp32 tensor of the input's shape."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_zero", FIXED, {"values": [0.0]}),
        Case("fixed_minus_half_pi", FIXED, {"values": [-3.14159265 / 2]}),
        Case("fixed_quarter_turns", FIXED, {"values": [0.0, 3.14159265 / 2, 3.14159265]}),
        Case("fixed_linspace", FIXED, {"linspace": (-3.14159265, 3.14159265, 1000)}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard"}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
