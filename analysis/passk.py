"""pass@k and fast_p@k of sampling methods: how likely k samples of a task hold a correct (a fast) kernel.

A sampling method makes several kernels for a task in one round: best_of_n's n samples, GEAK's
candidates, KernelAgent's workers. With n judged samples of which c pass, the unbiased estimator
of the chance that k samples drawn from them hold at least one that passes is

    pass@k = 1 - C(n - c, k) / C(n, k)          (1 when n - c < k; defined for k <= n)

(Chen et al. 2021). fast_p@k is the same with c the samples that are correct and more than p
times faster than eager. Per task, then the mean over tasks, per category and over all of them;
a task with fewer than k samples is left out of pass@k (the table says how many tasks each value
covers). The samples are a round's attempts with a verdict on the kernel (kbx's own failures are
not samples), from the per-round counts every task run carries (kbx.tracking.tracker); fast_p@k
needs timing, so it is empty on the CPU.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.load import SAMPLE_KEYS
from kbx.tracking.tracker import FAST_P

K_VALUES = (1, 2, 4, 8, 16, 32)  # the k reported, where some task has that many samples
ALL = "all"  # the category label of the figures over every task
GROUP = ["method", "hardware", "round"]
MIN_SAMPLES = 2  # a method samples when some task has at least this many judged attempts in a round


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from n samples of which c pass; NaN when k > n."""
    if k > n:
        return math.nan
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def table(frame: pd.DataFrame, ks=K_VALUES) -> pd.DataFrame:
    """Long form: method, hardware, round, category (and ALL), k, tasks, mean samples, pass@k, fast_p@k for each p.

    Only the (method, hardware, round) groups that sample (some task with MIN_SAMPLES or more judged
    attempts) appear, with the k of `ks` up to the most samples any of their tasks has, and that most."""
    columns = [*GROUP, "category", "k", "tasks", "samples", "pass_at_k", *[_fast(p) for p in FAST_P]]
    if not set(SAMPLE_KEYS) <= set(frame.columns):
        return pd.DataFrame(columns=columns)
    rows = frame[frame["judged_attempts"] > 0]
    rows = rows.groupby(GROUP, observed=True).filter(lambda g: g["judged_attempts"].max() >= MIN_SAMPLES)
    out = []
    for key, g in rows.groupby(GROUP, observed=True):
        top = int(g["judged_attempts"].max())
        for category, part in [*g.groupby("category", observed=True), (ALL, g)]:
            for k in sorted({k for k in ks if k <= top} | {top}):
                out.append({**dict(zip(GROUP, key, strict=True)), "category": category, "k": k, **_estimates(part, k)})
    return pd.DataFrame(out, columns=columns)


def _estimates(rows: pd.DataFrame, k: int) -> dict:
    """The mean over the tasks with at least k samples of each estimate."""
    enough = rows[rows["judged_attempts"] >= k]
    n = enough["judged_attempts"].astype(int).to_numpy()
    out = {"tasks": len(enough), "samples": float(n.mean()) if len(n) else np.nan,
           "pass_at_k": _mean(n, enough["correct_attempts"], k)}  # fmt: skip
    for p in FAST_P:
        out[_fast(p)] = _mean(n, enough[f"fast_{p:g}_attempts"], k)
    return out


def _mean(n: np.ndarray, passed: pd.Series, k: int) -> float:
    """Mean pass@k over tasks; NaN when a task's count was not measured (fast_p on the CPU) or there is none."""
    if not len(n) or passed.isna().any():
        return np.nan
    return float(np.mean([pass_at_k(int(a), int(b), k) for a, b in zip(n, passed.to_numpy(), strict=True)]))


def _fast(p: float) -> str:
    return f"fast_{p:g}_at_k"
