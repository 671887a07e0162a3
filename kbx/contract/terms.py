"""A convolution task's check against float64 with an allowance from each element's terms.

A Triton kernel's `tl.dot` on an NVIDIA GPU feeds fp32 operands to TF32 tensor cores, which drop
their low 13 mantissa bits (truncation, not rounding: on an H200 the experts of five convolution
tasks matched a float64 convolution of truncated operands to 0.09 of the allowance, 1,000 seeds each,
docs/BENCHMARKS.md 2026-11-28). Truncation errs toward zero, so the products' errors add up instead of
cancelling, and the tolerance's allowance, which scales with the output's own size, failed an honest
expert on about 1 % of the outlier case's seeds. The error lives in the products, so the bound does
too: each element may be off by TF32_PER_TERM times the sum of its products' magnitudes.

Used by task checks in the trusted judge (the task's `stochastic` field); torch only.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kbx.contract.compare import allowance
from kbx.tasks.identities import within_terms
from kbx.tasks.spec import Call, Tolerance

# Two operands truncated to TF32 put a product off by at most 2 x 2^-10 of its size; fp32
# accumulation adds about K x 2^-24 for K terms, negligible here. 2^-8 leaves 2x over that worst case.
TF32_PER_TERM = 2.0**-8
# Outputs up to this size are judged against float64; larger ones (the perf shapes) have an rms that
# no few cancelling elements collapse, and the elementwise rule judges them.
TERMS_MAX_ELEMENTS = 2**16


def terms_check(reference: Callable, terms: Callable, tolerance: Tolerance,
                per_term: float = TF32_PER_TERM) -> Callable[[Call, object], str | None]:  # fmt: skip
    """A `stochastic` check: the output against `reference` in float64, each element allowed the larger
    of the tolerance's allowance and `per_term` x `terms` (called like the reference, in float64: the
    sum of the magnitudes of the products behind each element, times the largest slope of whatever
    follows them). None (the elementwise rule) for a large output or one of the wrong type, dtype or shape."""

    def check(call: Call, got) -> str | None:
        if not (isinstance(got, torch.Tensor) and got.dtype == torch.float32) or got.numel() > TERMS_MAX_ELEMENTS:
            return None
        args = [_float64(a) for a in call.args]
        kwargs = {k: _float64(v) for k, v in call.kwargs.items()}
        exact = reference(*args, **kwargs)
        if not isinstance(exact, torch.Tensor) or tuple(got.shape) != tuple(exact.shape):
            return None
        return within_terms("the output's error against float64", got.to(exact.device), exact,
                            allowance(exact, tolerance, "float32"), terms(*args, **kwargs), per_term)  # fmt: skip

    return check


def magnitudes(*values):
    """|v| of each tensor and number (None as given): the operands of a terms function."""
    return [v if v is None else abs(v) for v in values]


def _float64(value):
    return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value
