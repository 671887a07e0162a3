"""Comparing a candidate's output with the reference's: the rules every verdict rests on.

Runs only in trusted processes (the judge, tests). Structure first (container type and
length, dict keys, exception type), then per tensor leaf: exact shape, exact dtype, then values:
integers and bools exactly, floats by the task's tolerance with NaN positions and infinities
required to agree, complex numbers on their real and imaginary parts.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from kbx.core.record import Mismatch, Status
from kbx.tasks.spec import Tolerance

EXCEPTION_KEY = "__exception__"
SHOWN_INDICES = 5  # differing elements listed in a mismatch report
PYTHON_FLOAT_TOL = 1e-5  # atol and rtol for Python float leaves, as for fp32 tensors
# Elements compared at a time: the float64 temporaries of a perf-shape output (2^28 elements and
# more) would take several GB of the judge's GPU at once; a chunk takes about 1 GB at most.
CHUNK_ELEMENTS = 1 << 24


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: Status
    reason: str = ""
    mismatch: Mismatch = dataclasses.field(default_factory=Mismatch)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


PASS = Outcome(Status.OK)


def compare(expected, got, tol: Tolerance, where: str = "output") -> Outcome:
    """Compare two output structures; the first difference found decides."""
    if isinstance(expected, dict) and EXCEPTION_KEY in expected:
        if isinstance(got, dict) and got.get(EXCEPTION_KEY) == expected[EXCEPTION_KEY]:
            return PASS
        return Outcome(Status.MISMATCH, f"{where}: expected {expected[EXCEPTION_KEY]} to be raised")
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return Outcome(Status.WRONG_TYPE, f"{where}: expected a tensor, got {type(got).__name__}")
        return compare_tensors(expected, got, tol, where)
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return Outcome(Status.WRONG_TYPE, f"{where}: expected a sequence, got {type(got).__name__}")
        if len(got) != len(expected):
            return Outcome(Status.WRONG_SHAPE, f"{where}: expected {len(expected)} items, got {len(got)}")
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            outcome = compare(e, g, tol, f"{where}[{i}]")
            if not outcome.ok:
                return outcome
        return PASS
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return Outcome(Status.WRONG_TYPE, f"{where}: expected a dict with keys {sorted(expected)}")
        for key in expected:
            outcome = compare(expected[key], got[key], tol, f"{where}[{key!r}]")
            if not outcome.ok:
                return outcome
        return PASS
    return compare_scalars(expected, got, where)


def compare_scalars(expected, got, where: str) -> Outcome:
    if isinstance(expected, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if math.isnan(expected) and math.isnan(got):
            return PASS
        if abs(got - expected) <= PYTHON_FLOAT_TOL + PYTHON_FLOAT_TOL * abs(expected):
            return PASS
    elif type(expected) is type(got) and expected == got:
        return PASS
    elif expected is None and got is None:
        return PASS
    return Outcome(Status.MISMATCH, f"{where}: expected {expected!r}, got {got!r}")


def compare_tensors(expected: torch.Tensor, got: torch.Tensor, tol: Tolerance, where: str) -> Outcome:
    if tuple(got.shape) != tuple(expected.shape):
        return Outcome(Status.WRONG_SHAPE, f"{where}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
    if got.dtype != expected.dtype:
        return Outcome(Status.WRONG_DTYPE, f"{where}: expected dtype {_name(expected.dtype)}, got {_name(got.dtype)}")
    got = got.to(expected.device)
    if expected.is_complex():
        bad = _float_mismatch(torch.view_as_real(expected), torch.view_as_real(got), tol, _name(expected.dtype))
        bad = bad.any(dim=-1)
    elif expected.is_floating_point():
        bad = _float_mismatch(expected, got, tol, _name(expected.dtype))
    else:
        bad = expected != got
    count = int(bad.sum())
    if count == 0:
        return PASS
    status = Status.UNWRITTEN_OUTPUT if _all_poison(got[bad]) else Status.MISMATCH
    mismatch = describe_mismatch(expected, got, bad, count, where)
    reason = (
        f"{where}: {count} of {expected.numel()} elements differ "
        f"(max abs err {mismatch.max_abs_err:.3g}, max rel err {mismatch.max_rel_err:.3g})"
    )
    if status is Status.UNWRITTEN_OUTPUT:
        reason = f"{where}: {count} of {expected.numel()} elements were never written (still hold the poison pattern)"
    return Outcome(status, reason, mismatch)


def _float_mismatch(expected: torch.Tensor, got: torch.Tensor, tol: Tolerance, dtype: str) -> torch.Tensor:
    """Boolean mask of elements outside tolerance, computed in float64, CHUNK_ELEMENTS at a time."""
    atol, rtol, rms_atol = tol.for_dtype(dtype)
    floor = atol + rms_atol * _rms(expected) if rms_atol else atol
    e_flat, g_flat = expected.reshape(-1), got.reshape(-1)
    parts = [_chunk_mismatch(e_flat[i : i + CHUNK_ELEMENTS].double(), g_flat[i : i + CHUNK_ELEMENTS].double(),
                             floor, rtol) for i in range(0, e_flat.numel(), CHUNK_ELEMENTS)]  # fmt: skip
    return torch.cat(parts).view(expected.shape) if parts else torch.zeros(expected.shape, dtype=torch.bool,
                                                                           device=expected.device)  # fmt: skip


def _chunk_mismatch(e: torch.Tensor, g: torch.Tensor, floor: float, rtol: float) -> torch.Tensor:
    e_nan, g_nan = torch.isnan(e), torch.isnan(g)
    close = torch.isfinite(e) & ((g - e).abs() <= floor + rtol * e.abs())  # an infinite expected value must match
    inf_match = torch.isinf(e) & (g == e)
    return ~((close & ~g_nan) | inf_match | (e_nan & g_nan))


def _rms(expected: torch.Tensor) -> float:
    """Root mean square of the finite elements (float64, in chunks); 0 when there are none."""
    flat, total, count = expected.reshape(-1), 0.0, 0
    for i in range(0, flat.numel(), CHUNK_ELEMENTS):
        chunk = flat[i : i + CHUNK_ELEMENTS].double()
        finite = chunk[torch.isfinite(chunk)]
        total += float(finite.square().sum())
        count += finite.numel()
    return (total / count) ** 0.5 if count else 0.0


def allowance(expected: torch.Tensor, tol: Tolerance, dtype: str) -> torch.Tensor:
    """The largest |got - expected| each element may have (float64), by the tolerance's rule.

    Public so the tolerance audit (kbx.quality.audit) measures errors against the judge's own bound.
    """
    atol, rtol, rms_atol = tol.for_dtype(dtype)
    floor = atol + rms_atol * _rms(expected) if rms_atol else atol
    return floor + rtol * expected.double().abs()


def _all_poison(values: torch.Tensor) -> bool:
    """Whether every given element is the all-ones byte pattern the worker poisons memory with."""
    if values.numel() == 0 or values.dtype == torch.bool or values.is_complex():
        return False
    as_bytes = values.contiguous().view(torch.uint8)
    return bool((as_bytes == 0xFF).all())


def describe_mismatch(expected, got, bad, count: int, where: str) -> Mismatch:
    e = torch.view_as_real(expected).double() if expected.is_complex() else expected.double()
    g = torch.view_as_real(got).double() if got.is_complex() else got.double()
    if expected.is_complex():
        e, g = e.norm(dim=-1), g.norm(dim=-1)
    err = (g - e).abs()
    err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
    rel = err / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    flat = bad.reshape(-1).nonzero().reshape(-1)[:SHOWN_INDICES]
    indices = tuple(tuple(int(i) for i in torch.unravel_index(idx, expected.shape)) for idx in flat) if expected.dim() else ((),)
    return Mismatch(
        leaf=where,
        count=count,
        numel=expected.numel(),
        max_abs_err=float(err[bad].max()),
        max_rel_err=float(rel[bad].max()),
        indices=indices,
        got=tuple(float(v) for v in g.reshape(-1)[flat]),
        expected=tuple(float(v) for v in e.reshape(-1)[flat]),
    )


def structure_matches(expected, got, where: str = "output") -> Outcome:
    """Shapes, dtypes and container layout only: for stochastic outputs judged by distribution."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return Outcome(Status.WRONG_TYPE, f"{where}: expected a tensor, got {type(got).__name__}")
        if tuple(got.shape) != tuple(expected.shape):
            return Outcome(Status.WRONG_SHAPE, f"{where}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
        if got.dtype != expected.dtype:
            return Outcome(Status.WRONG_DTYPE, f"{where}: expected dtype {_name(expected.dtype)}, got {_name(got.dtype)}")
        return PASS
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return Outcome(Status.WRONG_SHAPE, f"{where}: expected {len(expected)} items")
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            outcome = structure_matches(e, g, f"{where}[{i}]")
            if not outcome.ok:
                return outcome
    return PASS


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
