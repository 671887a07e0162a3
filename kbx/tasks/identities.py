"""Bounds for linear-algebra identity checks (A = Q R, Q^T Q = I, A v = w v, ...), from the matrix
size, the dtype's machine epsilon and, where the identity depends on it, a condition estimate.

A backward-stable factorization of an n x n matrix computed with machine epsilon eps satisfies its
identities only to about n * eps (Higham, Accuracy and Stability of Numerical Algorithms, ch. 9,
18, 19: the gamma_n = n u / (1 - n u) bounds), and a blocked kernel that accumulates in another
order lands anywhere under that. A fixed constant is both loose for a 16 x 16 matrix and tighter
than an honest fp32 kernel at n in the thousands (one failed by 5 % on a GPU), so each task's check
asks `size_bound(n, dtype, condition)` instead.

Used by task checks in the trusted judge; torch and the standard library only. `within` also
records each identity's error and unscaled bound while `measured()` is active, and `scaled(f)`
multiplies every bound by f: the tolerance audit and the tests use them to ask whether an honest
output passes with headroom and whether a wrong one fails, through the task's own check.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math

import torch

SAFETY = 16.0  # bound = SAFETY * n * eps: accumulation order, blocking and second-order terms of an honest kernel
MIN_DIM = 64  # below this n the bound stays at SAFETY * MIN_DIM * eps (1.2e-4 in fp32): constants dominate small n
TWO_SIDED = 2.0  # an identity quadratic in the factor (R^T R = A^T A) doubles its relative error
UNIT_FLOOR = 1e-300  # within_terms reports relative to max(|exact|, allowance, this): no division by zero

_SCALE: contextvars.ContextVar[float] = contextvars.ContextVar("kbx_identity_scale", default=1.0)
_SEEN: contextvars.ContextVar[list | None] = contextvars.ContextVar("kbx_identity_seen", default=None)


@dataclasses.dataclass(frozen=True)
class Measured:
    """One identity as a check evaluated it: its error and its (unscaled) bound."""

    what: str
    error: float
    bound: float

    @property
    def ratio(self) -> float:
        return self.error / self.bound if self.bound > 0 else float("inf")


def eps(dtype: torch.dtype) -> float:
    """Machine epsilon of a floating dtype (of its real part for a complex one)."""
    return torch.finfo(dtype.to_real() if dtype.is_complex else dtype).eps


def size_bound(n: int, dtype: torch.dtype, condition: float = 1.0) -> float:
    """The error an honest kernel's identity may reach for an n-sized problem in `dtype`, times a
    condition estimate (1 for backward-stable identities, which do not depend on conditioning)."""
    return SAFETY * max(int(n), MIN_DIM) * eps(dtype) * max(float(condition), 1.0)


def within(what: str, error: float, bound: float) -> str:
    """'' when error <= bound (times the active scale), else the reason; NaN never passes."""
    seen = _SEEN.get()
    if seen is not None:
        seen.append(Measured(what, float(error), float(bound)))
    allowed = bound * _SCALE.get()
    if error <= allowed:
        return ""
    return f"{what} = {error:.3g} (allowed {allowed:.3g})"


def within_terms(what: str, got: torch.Tensor, exact: torch.Tensor, floor: torch.Tensor, terms: torch.Tensor,
                 per_term: float) -> str:  # fmt: skip
    """For outputs that cancel (a dot product of two rows, a short convolution): each element may be
    off by the larger of `floor` (the task tolerance's allowance, kbx.contract.compare.allowance) and
    `per_term` x `terms`, the sum of the magnitudes of the products it adds up, where a product's
    rounding error lives. The tolerance's allowance scales with the output's own size and collapses
    where the terms cancel: an honest TF32 kernel then fails (8x the TF32 rule on a 64-term row dot
    product failed 7 of 1,000 seeds). The worst element decides, reported relative to the larger of
    its |exact| and its allowance; `exact`, `floor` and `terms` in float64."""
    err = (got.double() - exact).abs()
    allowed = torch.maximum(floor, per_term * terms)
    ratio = torch.where(allowed > 0, err / allowed, torch.where(err > 0, math.inf, 0.0))
    ratio = torch.where(torch.isnan(err), math.inf, ratio).reshape(-1)
    if ratio.numel() == 0:
        return within(what, 0.0, 1.0)
    worst = int(ratio.argmax())
    unit = max(float(exact.abs().reshape(-1)[worst]), float(allowed.reshape(-1)[worst]), UNIT_FLOOR)
    return within(what, float(err.reshape(-1)[worst]) / unit, float(allowed.reshape(-1)[worst]) / unit)


def passes(error: float, bound: float) -> bool:
    """Whether `within` would accept, without recording: for a check that widens a bound only when needed
    (while measuring, under an infinite scale, the bound as the judge applies it decides)."""
    scale = _SCALE.get()
    return error <= bound * (scale if math.isfinite(scale) else 1.0)


@contextlib.contextmanager
def scaled(factor: float):
    """Every bound `within` applies, multiplied by `factor` (0.5: ask for 2x headroom; inf: measure all)."""
    token = _SCALE.set(_SCALE.get() * factor)
    try:
        yield
    finally:
        _SCALE.reset(token)


@contextlib.contextmanager
def measured():
    """Collects a Measured for every identity checked inside the block."""
    seen: list[Measured] = []
    token = _SEEN.set(seen)
    try:
        yield seen
    finally:
        _SEEN.reset(token)


def measure(check, call, got) -> tuple[str, list[Measured]]:
    """Run a task's check with no bound enforced: (its structural reason or '', every identity measured)."""
    with measured() as seen, scaled(math.inf):
        reason = check(call, got)
    return reason or "", seen


def worst_ratio(check, call, got) -> tuple[str, float]:
    """(structural reason or '', the largest error / bound of a task's identities on this output)."""
    reason, seen = measure(check, call, got)
    return reason, max((m.ratio for m in seen), default=0.0)
