"""The task contract: what one KernelBench-X task supplies to kbx.

A task is data plus a few pure builders. It never runs a loop of its own: the
evaluator decides which cases run, with which seeds, on which device, and how the
outputs are judged. Everything here must be importable in the GPU worker, so this
module depends on torch and the standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

CATEGORIES = (
    "Activation",
    "Convolution",
    "Fusion",
    "Index",
    "LinearAlgebra",
    "Loss",
    "Math",
    "MatrixMultiply",
    "Normalization",
    "Optimizer",
    "Pooling",
    "Quantization",
    "Random",
    "Reduce",
    "SpatialOps",
)

# A case kind says where the case comes from and how it is seeded.
FIXED = "fixed"  # literal small inputs written in the task (seed-independent)
STANDARD = "standard"  # randn draws
OUTLIER = "outlier"  # randn draws with rare large-magnitude outliers
PERF = "perf"  # a perf shape; the smallest one is also checked for correctness
CASE_KINDS = (FIXED, STANDARD, OUTLIER, PERF)


@dataclasses.dataclass(frozen=True)
class Case:
    """One input configuration. `params` is handed verbatim to the task's `make_inputs`.

    `extra` marks a case beyond the upstream task's contract (a shape, dtype, group count or flag
    upstream's own tests never exercise): kbx reports it separately, and it must not turn a verdict
    that the contract's cases alone would give.
    """

    name: str
    kind: str
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    extra: bool = False


@dataclasses.dataclass(frozen=True)
class Call:
    """Positional and keyword arguments for one call of the entry function."""

    args: tuple
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How close a floating-point output must be to the reference.

    An element passes when |got - expected| <= atol + rtol * |expected| + rms_atol * rms(expected).
    `rms_atol` scales with the output's magnitude; it is the allowance for matrix products that
    Triton computes in TF32 by default (10-bit mantissa) while the fp32 reference does not.
    Per-dtype values left out fall back to DEFAULT_TOLERANCES.
    """

    atol: Mapping[str, float] = dataclasses.field(default_factory=dict)
    rtol: Mapping[str, float] = dataclasses.field(default_factory=dict)
    rms_atol: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def for_dtype(self, dtype: str) -> tuple[float, float, float]:
        base = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
        return (
            self.atol.get(dtype, base[0]),
            self.rtol.get(dtype, base[1]),
            self.rms_atol.get(dtype, 0.0),
        )


# (atol, rtol) per dtype. fp16/bf16 allow two units in the last place (eps = 2^-10 and 2^-7),
# so an honest kernel that rounds differently from torch once still passes; integers, bools
# and complex-free exact types must match exactly.
FP32_EPS = 2.0**-23  # machine epsilon (spacing of floats at 1), as FP16_EPS and BF16_EPS below
FP16_EPS = 2.0**-10
BF16_EPS = 2.0**-7
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (2 * FP16_EPS * 1e-2, 2 * FP16_EPS),
    "bfloat16": (2 * BF16_EPS * 1e-2, 2 * BF16_EPS),
    "complex64": (1e-5, 1e-5),
    "complex128": (1e-7, 1e-7),
}

# TF32 keeps 10 mantissa bits: per-product relative error about 2^-10; summed over K random-sign
# terms the error is about 2^-10 * rms(output). Ten times that leaves room without admitting fp16.
TF32_RMS_ATOL = 10 * 2.0**-10


def matmul_tolerance(factor: float = 1.0) -> Tolerance:
    """Tolerance for tasks whose core is a matrix product (TF32 allowance on fp32).

    `factor` widens the allowance where the product's TF32 error is not proportional to the
    output's rms (outlier rows, a nonlinearity or an outlier scale after the product, tiny
    outputs); each use names its reason and the tolerance audit (kbx.quality.audit) checks it.
    """
    return Tolerance(rms_atol={"float32": factor * TF32_RMS_ATOL})


@dataclasses.dataclass(frozen=True)
class Task:
    """Everything kbx knows about one task. Built in `tasks/<Category>/<stem>/task.py` as `TASK`, or
    listed there in `VARIANTS` for a dtype variant of it (see kbx.tasks.registry).

    Attributes:
        entry: name of the top-level callable a kernel must define (upstream's harness name).
        dtypes: the dtypes of the task's tensor inputs and outputs, e.g. ("float32", "int64").
        signature: the entry's Python signature, as shown to generation methods.
        description: what the entry computes, in kbx's words; used to prompt methods.
        reference: the PyTorch reference; same signature as the entry.
        make_inputs: builds a Call from a case's params, a seeded torch.Generator and a device.
        cases: fixed, standard and outlier correctness cases.
        perf: 3-5 perf shapes (kind PERF), smallest first; the first is also checked for correctness.
        flops: FLOP model, called with the same arguments as the entry.
        bytes: byte model (minimum DRAM traffic), called with the same arguments as the entry.
        tolerance: closeness rule for floating outputs.
        stochastic: for outputs that are random (dropout, sampling) or not unique (eigenvectors up
            to phase, SVD factors up to sign), a check `(call, output) -> reason`: "" accepts the
            output, a reason rejects it, None means "compare elementwise as usual" for this call.
            The reference output is then used only for structure (shapes, dtypes).
        dtype_bound: cases (by name; "*" for all) whose expected output is defined by the task's
            dtype itself (an fp32 overflow to inf, a clamp bound rounded to fp32, an fp32
            quantization decision), with the reason: a float64 computation is not the honest answer
            there, so the tolerance audit reports these cases as such instead of measuring them.
        version: bump when inputs, reference or rules change, so cached results are not reused.
        notes: kbx's departures from upstream (defects fixed), shown in listings.
    """

    entry: str
    dtypes: Sequence[str]
    signature: str
    description: str
    reference: Callable[..., Any]
    make_inputs: Callable[[Mapping[str, Any], Any, str], Call]
    cases: Sequence[Case]
    perf: Sequence[Case]
    flops: Callable[..., float]
    bytes: Callable[..., float]
    tolerance: Tolerance = dataclasses.field(default_factory=Tolerance)
    stochastic: Callable[[Call, Any], str] | None = None
    dtype_bound: Mapping[str, str] = dataclasses.field(default_factory=dict)
    version: int = 1
    inplace: bool = False
    notes: str = ""


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """A discovered task: its id and where it lives, plus the loaded spec."""

    id: str  # "Category/stem", upstream's identifier
    category: str
    stem: str
    path: str  # the task.py file (a folder's dtype variants share it)
    expert_path: str  # the expert kernel file (shared likewise), "" when the task has none
    spec: Task
    digest: str = ""  # of the task file as loaded: processes that load it again refuse a changed file

    def all_cases(self) -> list[Case]:
        return [*self.spec.cases, *self.spec.perf]

