"""95 % intervals for the findings: exact binomial for shares, a task bootstrap for everything else.

A share whose units are independent (one task run per task, as in one method on one GPU) gets the
Clopper-Pearson interval, which stays honest at 0/30 where a bootstrap collapses to a point. A
mean over kernels that share a task (a task's kernel counted in several rounds) resamples whole
tasks, as the deviance bootstrap does (analysis.deviance), so the interval reflects which tasks
happen to be in the suite.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.95
REPLICATES = 1000
SEED = 0


def clopper_pearson(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Exact two-sided interval for a binomial share; None without trials."""
    from scipy import stats

    if trials <= 0:
        return None
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(stats.beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(stats.beta.ppf(1 - tail, successes + 1, trials - successes))
    return low, high


def task_bootstrap(numerator: np.ndarray, denominator: np.ndarray, replicates: int = REPLICATES, seed: int = SEED,
                   level: float = LEVEL) -> tuple[float, float] | None:  # fmt: skip
    """Percentile interval of sum(numerator) / sum(denominator) when whole tasks are resampled.

    `numerator[i]` and `denominator[i]` are task i's sums (e.g. of speedups and of timed kernels),
    so a ratio of sums covers means and shares alike. Replicates that drew no denominator are
    dropped; None when fewer than two tasks contribute.
    """
    numerator, denominator = np.asarray(numerator, float), np.asarray(denominator, float)
    if (denominator > 0).sum() < 2:
        return None
    n = len(numerator)
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=replicates)
    den = weights @ denominator
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (weights @ numerator) / den
    ratios = ratios[den > 0]
    tail = (1 - level) / 2 * 100
    return float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))
