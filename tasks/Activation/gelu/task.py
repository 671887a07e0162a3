"""Activation/gelu: the Gaussian error linear unit, exact (erf) or tanh-approximated, in fp32."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return torch.nn.functional.gelu(input, approximate=approximate)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    return Call((x,), {"approximate": params.get("approximate", "none")})


def _flops(input, approximate="none"):
    return 8.0 * input.numel()


def _bytes(input, approximate="none"):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="gelu",
    dtypes=("float32",),
    signature="gelu(input: torch.Tensor, approximate: str = 'none') -> torch.Tensor",
    description=(
        "Apply GELU elementwise and return a new tensor of the input's shape and dtype. "
        "With approximate='none' use the exact form x * 0.5 * (1 + erf(x / sqrt(2))); "
        "with approximate='tanh' use 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small_none", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_small_tanh", FIXED, {"values": [-1.0, 0.0, 1.0], "approximate": "tanh"}),
        Case("fixed_range_none", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
        Case("fixed_range_tanh", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0], "approximate": "tanh"}),
        Case("standard_none", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("standard_tanh", STANDARD, {"shape": (1024, 1024), "mode": "standard", "approximate": "tanh"}),
        Case("outlier_none", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
        Case("outlier_tanh", OUTLIER, {"shape": (1024, 1024), "mode": "outlier", "approximate": "tanh"}),
    ],
    perf=[
        Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (22, 24, 26)
    ],
    flops=_flops,
    bytes=_bytes,
)
