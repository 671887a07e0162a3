"""Math/digamma: the digamma function psi(x) = d/dx ln Gamma(x), elementwise in fp32."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.digamma(input_tensor)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "abs_plus" in params:
        x = x.abs() + params["abs_plus"]
    if "shift" in params:
        x = x + params["shift"]
    return Call((x,))


def _flops(input_tensor):
    return 1.0 * input_tensor.numel()


def _bytes(input_tensor):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="digamma",
    dtypes=("float32",),
    signature="digamma(input_tensor: torch.Tensor) -> torch.Tensor",
    description=(
        "Return digamma(x) = Gamma'(x) / Gamma(x) elementwise as a new fp32 tensor of the input's shape "
        "(the inputs used here are positive)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_one", FIXED, {"values": [1.0]}),
        Case("fixed_half", FIXED, {"values": [0.5]}),
        Case("fixed_integers", FIXED, {"values": [1.0, 2.0, 3.0]}),
        Case("fixed_mixed", FIXED, {"values": [1.0, 0.5, 2.0, 1.5]}),
        Case("standard", STANDARD, {"shape": (1024,), "mode": "standard", "abs_plus": 0.1}),
        Case("outlier", OUTLIER, {"shape": (1024,), "mode": "outlier", "abs_plus": 0.1}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "shift": 1.0}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
