"""Math/gammaln: ln|Gamma(x)| elementwise in fp32, optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.special.gammaln(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "abs_plus" in params:
        x = x.abs() + params["abs_plus"]
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 100.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="gammaln",
    dtypes=("float32",),
    signature="gammaln(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return ln|Gamma(x)| elementwise as a new fp32 tensor of the input's shape (defined for negative "
        "non-integers too; lgamma(1) = lgamma(2) = 0)."
        "If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_two", FIXED, {"values": [2.0]}),
        Case("fixed_integers", FIXED, {"values": [2.0, 3.0, 4.0]}),
        Case("fixed_negative", FIXED, {"values": [-2.5, -3.5, -4.5]}),
        Case("fixed_1_to_1000", FIXED, {"values": [float(i) for i in range(1, 1001)]}),
        Case("fixed_out", FIXED, {"values": [-2.5, 1.0, 2.0, 4.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "abs_plus": 0.1}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "abs_plus": 0.1}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "abs_plus": 1e-6}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
