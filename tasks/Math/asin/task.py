"""Math/asin: elementwise arcsine of an fp32 tensor (NaN outside [-1, 1])."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.asin(input_tensor)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if params.get("tanh"):
        x = torch.tanh(x)  # random inputs squeezed into (-1, 1)
    if params.get("signed"):
        x = 2.0 * x - 1.0  # uniform in [-1, 1)
    return Call((x,))


def _flops(input_tensor):
    return 1.0 * input_tensor.numel()


def _bytes(input_tensor):
    return 2.0 * input_tensor.numel() * input_tensor.element_size()


TASK = Task(
    entry="asin",
    dtypes=("float32",),
    signature="asin(input_tensor: torch.Tensor) -> torch.Tensor",
    description=(
        "Return arcsin(x) elementwise as a new fp32 tensor of the input's shape (NaN where |x| > 1; an empty "
        "input gives an empty output)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_common", FIXED, {"values": [0.0, 0.5, -0.5, 1.0, -1.0]}),
        Case("fixed_near_one", FIXED, {"values": [0.9, -0.9]}),
        Case("fixed_empty", FIXED, {"values": []}),
        Case("fixed_single", FIXED, {"values": [0.707]}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard", "tanh": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "tanh": True}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "tanh": True}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "signed": True}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
