"""Math/reciprocal: 1 / x elementwise in fp32, optionally into `out`."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.reciprocal(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    if "min_mag" in params:
        x = torch.sign(x) * x.abs().clamp_min(params["min_mag"])  # keep sign, |x| >= min_mag
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 1.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="reciprocal",
    dtypes=("float32",),
    signature="reciprocal(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return 1 / x elementwise as a new fp32 tensor of the input's shape (1 / 0 = +inf, 1 / -0.0 = -inf). "
        "If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_mixed", FIXED, {"values": [-0.4595, -2.1219, -1.4314, 0.7298]}),
        Case("fixed_zero", FIXED, {"values": [0.0, 1.0, -1.0, 2.0]}),
        Case("fixed_magnitudes", FIXED, {"values": [1e10, -1e10, 1e-10, -1e-10]}),
        Case("fixed_ones", FIXED, {"values": [1.0, 1.0, 1.0, 1.0]}),
        Case("fixed_out", FIXED, {"values": [0.0, 1.0, -1.0, 2.0], "out": True}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard", "min_mag": 1e-3}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier", "min_mag": 1e-3}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
