"""Math/pow: input ** exponent elementwise in fp32, with a Python-number or tensor exponent, optionally into `out`.

kbx adds an `out=` case judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input_tensor, exponent, out=None):
    return torch.pow(input_tensor, exponent, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if params["mode"] != "uniform":
            x = x.abs() + 1e-3
    e = params["exponent"]
    exponent = literal(e, "float32", device) if isinstance(e, list) else e
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x, exponent), kwargs)


def _flops(input_tensor, exponent, out=None):
    return float(input_tensor.numel())


def _bytes(input_tensor, exponent, out=None):
    n_exp = exponent.numel() if isinstance(exponent, torch.Tensor) else 0
    return float((2 * input_tensor.numel() + n_exp) * input_tensor.element_size())


TASK = Task(
    entry="pow",
    dtypes=("float32",),
    signature=(
        "pow(input_tensor: torch.Tensor, exponent: float | int | torch.Tensor, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return input_tensor ** exponent elementwise as torch.pow does, as a new fp32 tensor: `exponent` is a "
        "Python number (int or float) or an fp32 tensor broadcast against the input. If `out` is given, write the "
        "result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_cube", FIXED, {"values": [2.0], "exponent": 3.0}),
        Case("fixed_square", FIXED, {"values": [1.0, 2.0, 3.0], "exponent": 2.0}),
        Case("fixed_tensor_exponent", FIXED, {"values": [1.0, 2.0, 3.0], "exponent": [3.0, 2.0, 1.0]}),
        Case("fixed_inverse_sqrt", FIXED, {"values": [4.0, 9.0, 16.0], "exponent": -0.5}),
        Case("fixed_out", FIXED, {"values": [4.0, 9.0, 16.0], "exponent": 1.5, "out": True}),
        Case("standard_square", STANDARD, {"shape": (64, 64), "mode": "standard", "exponent": 2.0}),
        Case("standard_inverse_sqrt", STANDARD, {"shape": (64, 64), "mode": "standard", "exponent": -0.5}),
        Case("outlier_square", OUTLIER, {"shape": (64, 64), "mode": "outlier", "exponent": 2.0}),
        Case("outlier_inverse_sqrt", OUTLIER, {"shape": (64, 64), "mode": "outlier", "exponent": -0.5}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "exponent": 2}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case judged after the call.",
)
