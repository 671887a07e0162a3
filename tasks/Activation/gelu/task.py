"""Activation/gelu: the Gaussian error linear unit, exact (erf) or tanh-approximated, in fp32.

Dtype variants (VARIANTS): gelu_bf16 and gelu_fp16 take and return a half-precision tensor, evaluated
in fp32 and rounded once; gelu_int8 truncates the fp32 result back to int8.
"""

import functools

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor

FORMS = (
    "With approximate='none' use the exact form x * 0.5 * (1 + erf(x / sqrt(2))); "
    "with approximate='tanh' use 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."
)


def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return torch.nn.functional.gelu(input, approximate=approximate)


def make_inputs(params, gen, device, dtype: str = "float32") -> Call:
    if "values" in params:
        x = literal(params["values"], dtype, device)
    else:
        x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
    return Call((x,), {"approximate": params.get("approximate", "none")})


def _flops(input, approximate="none"):
    return 8.0 * input.numel()


def _bytes(input, approximate="none"):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="gelu",
    dtypes=("float32",),
    signature="gelu(input: torch.Tensor, approximate: str = 'none') -> torch.Tensor",
    description="Apply GELU elementwise and return a new tensor of the input's shape and dtype. " + FORMS,
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

_EXTREME = [-10.0, -3.0, -1.0, 0.0, 1.0, 3.0, 10.0]
_LINSPACE = [-6.0 + 12.0 * i / 256 for i in range(257)]  # linspace(-6, 6, 257): exact in fp16, rounded to bf16


def half_precision(entry: str, dtype: str, standard_shape: tuple) -> Task:
    """gelu_bf16 / gelu_fp16: one set of cases in `dtype`; `standard_shape` is the shape of the random ones."""
    return Task(
        entry=entry,
        dtypes=(dtype,),
        signature=f"{entry}(input: torch.Tensor, approximate: str = 'none') -> torch.Tensor",
        description=(
            f"Apply GELU elementwise to a {dtype} tensor and return a new {dtype} tensor of the same shape. "
            f"{FORMS} Evaluate in at least fp32 precision and round once to {dtype} at the end."
        ),
        reference=reference,
        make_inputs=functools.partial(make_inputs, dtype=dtype),
        cases=[
            Case("fixed_small", FIXED, {"values": [-2.0, -1.0, 0.0, 1.0, 2.0]}),
            Case("fixed_extreme", FIXED, {"values": _EXTREME}),
            Case("fixed_2d", FIXED, {"values": [[-2.0, -0.5, 0.0], [0.5, 2.0, 4.0]]}),
            Case("fixed_linspace", FIXED, {"values": _LINSPACE}),
            Case("fixed_extreme_tanh", FIXED, {"values": _EXTREME, "approximate": "tanh"}),
            Case("standard_none", STANDARD, {"shape": standard_shape, "mode": "standard"}),
            Case("standard_tanh", STANDARD, {"shape": standard_shape, "mode": "standard", "approximate": "tanh"}),
            Case("outlier_none", OUTLIER, {"shape": standard_shape, "mode": "outlier"}),
            Case("outlier_tanh", OUTLIER, {"shape": standard_shape, "mode": "outlier", "approximate": "tanh"}),
        ],
        perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (25, 26, 27, 28)],
        flops=_flops,
        bytes=_bytes,
    )


def int8() -> Task:
    """gelu_int8: int8 in, fp32 GELU, truncation back to int8."""

    def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
        return torch.nn.functional.gelu(input.to(torch.float32), approximate=approximate).to(torch.int8)

    def make_inputs(params, gen, device) -> Call:
        if "values" in params:
            x = literal(params["values"], "int8", device)
        else:
            x = rand_int(params["shape"], params["low"], params["high"], gen, device, dtype="int8")
        return Call((x,), {"approximate": params.get("approximate", "none")})

    small = [-10, -5, 0, 5, 10]
    return Task(
        entry="gelu_int8",
        dtypes=("int8",),
        signature="gelu_int8(input: torch.Tensor, approximate: str = 'none') -> torch.Tensor",
        description=(
            "Convert the int8 input to fp32, apply GELU elementwise (approximate='none': "
            "x * 0.5 * (1 + erf(x / sqrt(2))); approximate='tanh': 0.5 * x * (1 + tanh(sqrt(2/pi) * "
            "(x + 0.044715 * x^3)))) in fp32, then convert back to int8 by truncation toward zero (a plain cast, "
            "no rounding). Return a new int8 tensor of the input's shape. The fp32 evaluation matters at the "
            "edges: e.g. the erf form gives GELU(5) = 4.9999986 (truncates to 4), while for x >= 6 the fp32 "
            "result rounds to x itself (gives x)."
        ),
        reference=reference,
        make_inputs=make_inputs,
        cases=[
            Case("fixed_small", FIXED, {"values": small}),
            Case("fixed_edges", FIXED, {"values": [-128, -127, -1, 0, 1, 126, 127]}),
            Case("fixed_2d", FIXED, {"values": [[-10, -5, 0], [5, 10, 20]]}),
            Case("fixed_small_tanh", FIXED, {"values": small, "approximate": "tanh"}),
            Case("standard_none", STANDARD, {"shape": (4096,), "low": -20, "high": 20}),
            Case("standard_tanh", STANDARD, {"shape": (4096,), "low": -20, "high": 20, "approximate": "tanh"}),
            Case("outlier_none", OUTLIER, {"shape": (4096,), "low": -128, "high": 128}),
            Case("outlier_tanh", OUTLIER, {"shape": (4096,), "low": -128, "high": 128, "approximate": "tanh"}),
        ],
        perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "low": -10, "high": 10}) for e in (26, 27, 28, 29)],
        flops=_flops,
        bytes=_bytes,
    )


VARIANTS = [
    half_precision("gelu_bf16", "bfloat16", standard_shape=(2048,)),
    half_precision("gelu_fp16", "float16", standard_shape=(1024, 1024)),
    int8(),
]
