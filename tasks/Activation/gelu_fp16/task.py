"""Activation/gelu_fp16: GELU (exact erf or tanh form) on a float16 tensor, float16 result."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return torch.nn.functional.gelu(input, approximate=approximate)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float16", device)
    else:
        x = rand_tensor(params["shape"], "float16", params["mode"], gen, device)
    return Call((x,), {"approximate": params.get("approximate", "none")})


def _flops(input, approximate="none"):
    return 8.0 * input.numel()


def _bytes(input, approximate="none"):
    return 2.0 * input.numel() * input.element_size()


_EXTREME = [-10.0, -3.0, -1.0, 0.0, 1.0, 3.0, 10.0]
_LINSPACE = [-6.0 + 12.0 * i / 256 for i in range(257)]  # linspace(-6, 6, 257), exact in fp16

TASK = Task(
    entry="gelu_fp16",
    dtypes=("float16",),
    signature="gelu_fp16(input: torch.Tensor, approximate: str = 'none') -> torch.Tensor",
    description=(
        "Apply GELU elementwise to a float16 tensor and return a new float16 tensor of the same shape. "
        "With approximate='none' use the exact form x * 0.5 * (1 + erf(x / sqrt(2))); "
        "with approximate='tanh' use 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))). "
        "Evaluate in at least fp32 precision and round once to float16 at the end."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
        Case("fixed_extreme", FIXED, {"values": _EXTREME}),
        Case("fixed_2d", FIXED, {"values": [[-2.0, -0.5, 0.0], [0.5, 2.0, 4.0]]}),
        Case("fixed_linspace", FIXED, {"values": _LINSPACE}),
        Case("fixed_extreme_tanh", FIXED, {"values": _EXTREME, "approximate": "tanh"}),
        Case("standard_none", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("standard_tanh", STANDARD, {"shape": (1024, 1024), "mode": "standard", "approximate": "tanh"}),
        Case("outlier_none", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
        Case("outlier_tanh", OUTLIER, {"shape": (1024, 1024), "mode": "outlier", "approximate": "tanh"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (25, 26, 27, 28)],
    flops=_flops,
    bytes=_bytes,
)
