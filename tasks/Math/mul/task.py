"""Math/mul: elementwise product with torch.mul semantics: broadcasting and type promotion across int, float,
complex operands and Python numbers, optionally into `out`.

Perf shapes are fp16 pairs, as upstream's perf template; kbx adds a small fp16 correctness case and an `out=` case.

Dtype variants (VARIANTS): mul_bf16 and mul_fp16, two tensors of one half-precision dtype, without `out`.
Upstream ships them without metadata (its evaluator cannot resolve them); kbx models them on this task.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other, out=None):
    return torch.mul(input, other, out=out)


def _operand(spec, device):
    values, dtype = spec
    return literal(values, dtype, device) if dtype else values  # dtype None: a Python number


def make_inputs(params, gen, device) -> Call:
    if "a" in params:
        x, y = _operand(params["a"], device), _operand(params["b"], device)
    else:
        dtype = params.get("dtype", "float32")
        x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
        y = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
    kwargs = {}
    if params.get("out"):
        kwargs["out"] = torch.zeros(torch.broadcast_shapes(x.shape, getattr(y, "shape", ())),
                                    dtype=torch.result_type(x, y), device=device)
    return Call((x, y), kwargs)


def _n_out(input, other):
    return torch.broadcast_shapes(input.shape, getattr(other, "shape", ())).numel()


def _flops(input, other, out=None):
    return float(_n_out(input, other))


def _bytes(input, other, out=None):
    other_bytes = other.numel() * other.element_size() if isinstance(other, torch.Tensor) else 0
    size = torch.empty((), dtype=torch.result_type(input, other)).element_size()
    return float(input.numel() * input.element_size() + other_bytes + _n_out(input, other) * size)


TASK = Task(
    entry="mul",
    dtypes=("float32", "float16", "int64", "complex64"),
    signature="mul(input: torch.Tensor, other: torch.Tensor | float, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return input * other elementwise as torch.mul does: shapes broadcast, `other` may be a Python number, and "
        "the result dtype follows torch's type promotion (int64 * int64 -> int64, int64 * float32 -> float32, "
        "complex64 * complex64 -> complex64 with the complex product, float32 * Python float -> float32, "
        "float16 * float16 -> float16 rounded once). If `out` is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_int64_broadcast", FIXED, {"a": ([1, 2, 3], "int64"), "b": ([[1], [2], [3]], "int64")}),
        Case("fixed_python_scalar", FIXED, {"a": ([1.0, 2.0, 3.0], "float32"), "b": (2.5, None)}),
        Case("fixed_complex64", FIXED, {"a": ([1 + 2j, 3 + 4j], "complex64"), "b": ([5 + 6j, 7 + 8j], "complex64")}),
        Case("fixed_int_times_float", FIXED, {"a": ([1, 2, 3], "int64"), "b": ([0.5, 1.5, 2.5], "float32")}),
        Case("fixed_out", FIXED, {"a": ([1.0, 2.0, 3.0], "float32"), "b": ([[1.0], [-2.0]], "float32"), "out": True}),
        Case("standard_1d", STANDARD, {"shape": (1024,), "mode": "standard"}),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("standard_fp16", STANDARD, {"shape": (64, 64), "mode": "standard", "dtype": "float16"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "dtype": "float16"}) for e in (25, 26, 27, 28)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="perf shapes are fp16 (as upstream); adds an fp16 correctness case and an `out=` case.",
)


_OTHER = [[0.5, 1.5], [2.5, 3.5]]


def half_precision(entry: str, dtype: str) -> Task:
    """mul_bf16 / mul_fp16: two `dtype` tensors (no Python numbers, no `out`), the product rounded once."""

    def reference(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        return torch.mul(input, other)

    def make_inputs(params, gen, device) -> Call:
        if "values" in params:
            x = literal(params["values"], dtype, device)
            y = literal(params["other"], dtype, device)
        else:
            x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
            y = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
        return Call((x, y))

    def _flops(input, other):
        return float(_n_out(input, other))

    def _bytes(input, other):
        return float((input.numel() + other.numel() + _n_out(input, other)) * input.element_size())

    return Task(
        entry=entry,
        dtypes=(dtype,),
        signature=f"{entry}(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor",
        description=(
            f"Return input * other elementwise for two {dtype} tensors whose shapes broadcast against each other, "
            f"as a new {dtype} tensor of the broadcast shape. The product must be rounded once to {dtype} (as if "
            "computed in fp32)."
        ),
        reference=reference,
        make_inputs=make_inputs,
        cases=[
            Case("fixed", FIXED, {"values": [[1.0, 2.0], [3.0, 4.0]], "other": _OTHER}),
            Case("fixed_negative", FIXED, {"values": [[-1.0, 0.0], [2.0, -3.0]], "other": [[4.0, -5.0], [-6.0, 7.0]]}),
            Case("fixed_zeros", FIXED, {"values": [[0.0, 0.0], [0.0, 0.0]], "other": _OTHER}),
            Case("fixed_broadcast", FIXED, {"values": [[1.0, 2.0, 3.0]], "other": [10.0, 0.0, -10.0]}),
            Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
            Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
        ],
        perf=[
            Case(f"{m}x{n}", PERF, {"shape": (m, n), "mode": "uniform"})
            for m, n in ((8192, 8192), (8192, 16384), (16384, 16384))
        ],
        flops=_flops,
        bytes=_bytes,
        notes="dtype variant without upstream metadata; modelled on Math/mul.",
    )


VARIANTS = [half_precision("mul_bf16", "bfloat16"), half_precision("mul_fp16", "float16")]
