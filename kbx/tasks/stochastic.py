"""Shared pieces of distributional contracts for stochastic tasks (dropout and the like)."""

from __future__ import annotations

import math

import torch

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


def keep_rate_in_halves(kept, info, q: float) -> str:
    """'' if the kept fraction of the informative elements (`info`, bool) is plausible for keep rate `q`
    over the whole flattened tensor and over each half: a mask drawn for one half only, or a rate that
    drifts along the tensor, shows in a half where the whole can still look right."""
    kept, info = kept.flatten(), info.flatten()
    half = info.numel() // 2
    for what, sl in (("whole", slice(None)), ("first half", slice(0, half)), ("second half", slice(half, None))):
        reason = keep_rate_reason(int(kept[sl].sum()), int(info[sl].sum()), q, what)
        if reason:
            return reason
    return ""


def dropout_reason(got, kept_val, allowed, p: float) -> str:
    """'' if each element of `got` is 0 or its kept value (within `allowed`) at a plausible keep rate.

    Elements whose kept value is itself within `allowed` of 0 say nothing about the mask and are not
    counted; the rate test runs over the whole flattened tensor and over each half.
    """
    g = got.detach().to(kept_val.device, torch.float64).flatten()
    kept_val, allowed = kept_val.flatten(), allowed.flatten()
    if not bool(torch.isfinite(g).all()):
        return "output has non-finite values"
    is_zero = g == 0
    bad = ~(is_zero | ((g - kept_val).abs() <= allowed))
    if bad.any():
        i = int(bad.nonzero()[0])
        return (
            f"{int(bad.sum())} of {g.numel()} elements are neither 0 nor the kept value, e.g. flat index {i}: "
            f"got {g[i].item():.6g}, kept value {kept_val[i].item():.6g}"
        )
    info = kept_val.abs() > allowed
    kept = info & ~is_zero
    return keep_rate_in_halves(kept, info, 1.0 - p)
