"""Activation/sigmoid: the logistic function 1 / (1 + exp(-x)) elementwise in fp32, optionally into `out`.

kbx adds a case that passes `out` (upstream never exercised it); `out` is judged after the call.

Dtype variants (VARIANTS): sigmoid_bf16 and sigmoid_fp16, without `out`. Upstream ships them without metadata
(its evaluator cannot resolve them); kbx models them on this task with half-precision inputs and outputs.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.sigmoid(input, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 4.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="sigmoid",
    dtypes=("float32",),
    signature="sigmoid(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return sigmoid(x) = 1 / (1 + exp(-x)) elementwise as a new tensor of the input's shape and dtype. "
        "If `out` (a tensor of the same shape and dtype) is given, write the result into it and return `out`; "
        "`input` itself must not change."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_small", FIXED, {"values": [0.0, 1.0, -1.0]}),
        Case("fixed_pairs", FIXED, {"values": [0.5, -0.5, 2.0, -2.0]}),
        Case("fixed_2d", FIXED, {"values": [[0.0, 1.0], [-1.0, 2.0]]}),
        Case("fixed_zeros", FIXED, {"values": [[0.0] * 3] * 3}),
        Case("fixed_out", FIXED, {"values": [0.5, -0.5, 2.0, -2.0], "out": True}, extra=True),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case; `out` and `input` are judged after the call.",
)

_LINSPACE = [-12.0 + 24.0 * i / 256 for i in range(257)]  # linspace(-12, 12, 257): exact in fp16, rounded to bf16


def half_precision(entry: str, dtype: str) -> Task:
    """sigmoid_bf16 / sigmoid_fp16: a new `dtype` tensor (no `out`), evaluated in fp32 and rounded once."""

    def reference(input: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(input)

    def make_inputs(params, gen, device) -> Call:
        if "values" in params:
            x = literal(params["values"], dtype, device)
        else:
            x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
        return Call((x,))

    def _flops(input):
        return 5.0 * input.numel()

    def _bytes(input):
        return 2.0 * input.numel() * input.element_size()

    return Task(
        entry=entry,
        dtypes=(dtype,),
        signature=f"{entry}(input: torch.Tensor) -> torch.Tensor",
        description=(
            f"Return sigmoid(x) = 1 / (1 + exp(-x)) elementwise for a {dtype} tensor as a new {dtype} tensor of "
            f"the same shape. Evaluate in at least fp32 precision and round once to {dtype} at the end."
        ),
        reference=reference,
        make_inputs=make_inputs,
        cases=[
            Case("fixed_small", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
            Case("fixed_extreme", FIXED, {"values": [-20.0, -10.0, -3.0, -1.0, 0.0, 1.0, 3.0, 10.0, 20.0]}),
            Case("fixed_2d", FIXED, {"values": [[-6.0, -2.0, 0.0], [2.0, 6.0, 12.0]]}),
            Case("fixed_linspace", FIXED, {"values": _LINSPACE}),
            Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
            Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
        ],
        perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (25, 26, 27, 28)],
        flops=_flops,
        bytes=_bytes,
        notes="dtype variant without upstream metadata; modelled on Activation/sigmoid.",
    )


VARIANTS = [half_precision("sigmoid_bf16", "bfloat16"), half_precision("sigmoid_fp16", "float16")]
