"""Activation/relu: max(x, 0) elementwise in fp32, optionally in place (the input is judged after the call).

Dtype variants (VARIANTS): relu_bf16 and relu_fp16, never in place. Upstream ships them without metadata
(its evaluator cannot resolve them); kbx models them on this task with half-precision inputs and outputs.
"""

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


def half_precision(entry: str, dtype: str, extreme: float) -> Task:
    """relu_bf16 / relu_fp16: a new `dtype` tensor, `input` unchanged; `extreme` is a large finite value."""

    def reference(input: torch.Tensor) -> torch.Tensor:
        return torch.relu(input)

    def make_inputs(params, gen, device) -> Call:
        if "values" in params:
            x = literal(params["values"], dtype, device)
        else:
            x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
        return Call((x,))

    def _flops(input):
        return 1.0 * input.numel()

    def _bytes(input):
        return 2.0 * input.numel() * input.element_size()

    return Task(
        entry=entry,
        dtypes=(dtype,),
        signature=f"{entry}(input: torch.Tensor) -> torch.Tensor",
        description=(
            f"Return max(x, 0) elementwise for a {dtype} tensor as a new {dtype} tensor of the same shape; "
            "`input` must not change (the sign of a zero result is not judged)."
        ),
        reference=reference,
        make_inputs=make_inputs,
        cases=[
            Case("fixed_small", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
            Case("fixed_2d", FIXED, {"values": [[-3.0, -0.0, 0.0, 1.0], [2.0, -2.0, 3.0, -4.0]]}),
            Case("fixed_extreme", FIXED, {"values": [-extreme, -100.0, -1.0, 0.0, 1.0, 100.0, extreme]}),
            Case("fixed_zeros", FIXED, {"values": [[0.0] * 4] * 4}),
            Case("fixed_pattern", FIXED, {"values": [-1.0, 1.0, -1.0, 1.0, 0.0, 0.0]}),
            Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
            Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
        ],
        perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (25, 26, 27, 28)],
        flops=_flops,
        bytes=_bytes,
        notes="dtype variant without upstream metadata; modelled on Activation/relu.",
    )


FP16_MAX = 65504.0  # the largest finite float16

VARIANTS = [
    half_precision("relu_bf16", "bfloat16", extreme=1e4),
    half_precision("relu_fp16", "float16", extreme=FP16_MAX),
]
