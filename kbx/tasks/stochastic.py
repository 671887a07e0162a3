"""Shared pieces of distributional contracts for stochastic tasks (dropout and the like)."""

from __future__ import annotations

import math

KEEP_RATE_SIGMAS = 6.0  # binomial standard deviations a keep rate may stray before it is implausible
MIN_RATE_ELEMENTS = 100  # below this many informative elements the keep-rate test is skipped


def keep_rate_reason(kept: int, total: int, q: float, what: str) -> str:
    """'' if `kept` of `total` Bernoulli(q) trials is within KEEP_RATE_SIGMAS standard deviations of q."""
    if total < MIN_RATE_ELEMENTS:
        return ""
    sd = math.sqrt(q * (1.0 - q) / total)
    rate = kept / total
    if abs(rate - q) > KEEP_RATE_SIGMAS * sd + 1e-12:
        return (f"{what}: kept fraction {rate:.4f} of {total} elements, "
                f"expected {q:.4f} +- {KEEP_RATE_SIGMAS * sd:.4f}")  # fmt: skip
    return ""
