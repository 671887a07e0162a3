"""Math/erf: the Gauss error function elementwise in fp32."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.erf(input_tensor)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if "clamp" in params:
            x = x.clamp(-params["clamp"], params["clamp"])
    return Call((x,))


def _flops(input_tensor):
    return float(input_tensor.numel())


def _bytes(input_tensor):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="erf",
    dtypes=("float32",),
    signature="erf(input_tensor: torch.Tensor) -> torch.Tensor",
    description=(
        "Return erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt elementwise as a new fp32 tensor of the "
        "input's shape."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_half", FIXED, {"values": [0.5]}),
        Case("fixed_mixed", FIXED, {"values": [0.5, -1.0, 2.0]}),
        Case("fixed_saturated", FIXED, {"values": [10.0, -10.0]}),
        Case("fixed_zero", FIXED, {"values": [0.0]}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard", "clamp": 10.0}),
        Case("standard_2d", STANDARD, {"shape": (64, 64), "mode": "standard", "clamp": 10.0}),
        Case("outlier_1d", OUTLIER, {"shape": (1024,), "mode": "outlier", "clamp": 10.0}),
        Case("outlier_2d", OUTLIER, {"shape": (64, 64), "mode": "outlier", "clamp": 10.0}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "standard"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
