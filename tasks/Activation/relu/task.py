"""Activation/relu: max(x, 0) elementwise in fp32, optionally in place (the input is judged after the call)."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return torch.nn.functional.relu(input, inplace=inplace)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"inplace": True} if params.get("inplace") else {}
    return Call((x,), kwargs)


def _flops(input, inplace=False):
    return float(input.numel())


def _bytes(input, inplace=False):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="relu",
    dtypes=("float32",),
    signature="relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor",
    description=(
        "Return max(x, 0) elementwise. With inplace=False return a new tensor of the input's shape and dtype and "
        "leave `input` unchanged; with inplace=True overwrite `input` with the result and return `input` itself."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [-1.0, 0.0, 1.0]}),
        Case("fixed_2d", FIXED, {"values": [[-1.0, 2.0], [3.0, -4.0]]}),
        Case("fixed_inplace", FIXED, {"values": [-1.0, 0.0, 1.0], "inplace": True}),
        Case("fixed_2x3", FIXED, {"values": [[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]]}),
        Case("standard", STANDARD, {"shape": (256, 256), "mode": "standard"}),
        Case("standard_inplace", STANDARD, {"shape": (256, 256), "mode": "standard", "inplace": True}, extra=True),
        Case("outlier", OUTLIER, {"shape": (256, 256), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds a random inplace=True case; `input` is judged after every call.",
)
