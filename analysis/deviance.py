"""How much of the variation in correctness is due to the task's category, and how much to the method.

The paper reports the share of deviance explained by category (9.4 %) and by method (3.3 %) in a
binomial model of correctness. A referee noted that this ignores degrees of freedom: a factor with
14 df removes about 14 units of deviance by chance alone. So besides the raw shares this module
gives each factor's likelihood-ratio test (alone, and dropped from the additive model), deviance
per df, the share above chance (reduction minus df), AIC, McFadden R², and a task-resampling
bootstrap interval for the category/method ratio.

The outcome is a 0/1 per task run (one row per method x task x hardware x seed), so deviances are
Bernoulli deviances. A one-factor model's fitted probabilities are its cell means, which gives its
deviance in closed form; the bootstrap uses that (thousands of refits would be slow), and the tests
check it against the statsmodels GLM fit.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

FACTORS = ("category", "method")
OUTCOME = "correct"
BOOTSTRAP_REPLICATES = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95
MIN_VALID_SHARE = 0.5  # below this share of usable replicates the interval is not reported


def analyse(outcomes: pd.DataFrame, replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED) -> dict:
    """The full deviance analysis of `outcomes` (columns task, category, method, correct) as JSON-ready data."""
    data = outcomes[["task", *FACTORS, OUTCOME]].dropna().astype({OUTCOME: float})
    result = {"outcome": "correct (best attempt by the last round) per task run", "n": int(len(data)),
              "n_tasks": int(data["task"].nunique()), "n_correct": int(data[OUTCOME].sum()),
              "levels": {f: sorted(map(str, data[f].unique())) for f in FACTORS}, "notes": []}  # fmt: skip
    notes = result["notes"]
    if data.empty or data[OUTCOME].nunique() < 2:
        notes.append("the outcome does not vary (no rows, or all correct, or all incorrect): nothing to explain")
        ratio = _empty_ratio(0)
        notes += ratio.pop("notes")
        return {**result, **{f: _empty_factor() for f in FACTORS}, "full": {}, "ratio": ratio}
    result["separated"] = {f: separated_levels(data, f) for f in FACTORS}
    for f in FACTORS:
        if result["separated"][f]:
            notes.append(f"{f} levels where every run passes or every run fails (fitted exactly): "
                         + ", ".join(result["separated"][f]))  # fmt: skip
    fits = {name: fit(data, terms) for name, terms in
            (("null", ()), ("category", ("category",)), ("method", ("method",)), ("full", FACTORS))}  # fmt: skip
    null = fits["null"]
    result["null_deviance"] = null["deviance"]
    result["models"] = fits
    for f in FACTORS:
        other = FACTORS[1 - FACTORS.index(f)]
        result[f] = factor_summary(fits[f], null, fits["full"], fits[other])
        if result[f]["df"] == 0:
            notes.append(f"{f} has a single level: it explains nothing and cannot be tested")
    full = fits["full"]
    result["full"] = {"explained_deviance": _share(null["deviance"] - full["deviance"], null["deviance"]),
                      "mcfadden_r2": 1 - full["llf"] / null["llf"], "aic": full["aic"], "df": full["df_model"]}  # fmt: skip
    result["ratio"] = bootstrap_ratio(data, replicates, seed)
    result["ratio"]["category_over_method"] = _ratio(result["category"]["explained_deviance"],
                                                     result["method"]["explained_deviance"])  # fmt: skip
    result["ratio"]["per_df"] = _ratio(result["category"]["deviance_per_df"], result["method"]["deviance_per_df"])
    notes += result["ratio"].pop("notes")
    return result


def fit(data: pd.DataFrame, terms: tuple[str, ...]) -> dict:
    """Binomial GLM `correct ~ C(term) + ...` (or `~ 1`); factors with one level are left out.

    Separation (a level where every run passes or fails) drives a coefficient to infinity while
    the deviance converges; statsmodels warns, and the warning is kept in the result.
    """
    import statsmodels.formula.api as smf
    from statsmodels.genmod.families import Binomial

    used = [t for t in terms if data[t].nunique() > 1]
    formula = f"{OUTCOME} ~ " + (" + ".join(f"C({t})" for t in used) if used else "1")
    # Identical 0/1 rows collapse into one with a frequency weight: the same likelihood, deviance
    # and df as the row-level fit, at a fraction of the cost for 10,000 runs.
    cells = data.groupby([*used, OUTCOME], observed=True).size().rename("n").reset_index()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = smf.glm(formula, data=cells, family=Binomial(), freq_weights=cells["n"].to_numpy(float)).fit()
    return {"formula": formula, "deviance": float(model.deviance), "llf": float(model.llf), "aic": float(model.aic),
            "df_model": int(round(model.df_model)), "df_resid": int(round(model.df_resid)),
            "warnings": sorted({type(w.message).__name__ for w in caught})}  # fmt: skip


def factor_summary(alone: dict, null: dict, full: dict, other_alone: dict) -> dict:
    """One factor's explained share, tests and df-adjusted figures."""
    from scipy import stats

    reduction = null["deviance"] - alone["deviance"]
    df = alone["df_model"]
    drop = other_alone["deviance"] - full["deviance"]  # what the full model loses without this factor
    drop_df = other_alone["df_resid"] - full["df_resid"]
    return {
        "explained_deviance": _share(reduction, null["deviance"]),
        "deviance_reduction": reduction,
        "df": df,
        "deviance_per_df": reduction / df if df else None,
        "explained_above_chance": _share(reduction - df, null["deviance"]) if df else None,
        "aic": alone["aic"],
        "mcfadden_r2": 1 - alone["llf"] / null["llf"],
        "mcfadden_r2_adjusted": 1 - (alone["llf"] - df) / null["llf"],
        "lr_test": {"chi2": reduction, "df": df, "p": float(stats.chi2.sf(reduction, df)) if df else None},
        "drop_from_full": {"deviance": drop, "df": drop_df, "p": float(stats.chi2.sf(drop, drop_df)) if drop_df else None},
    }


def separated_levels(data: pd.DataFrame, factor: str) -> list[str]:
    """Levels whose runs all pass or all fail (the GLM fits them exactly)."""
    rates = data.groupby(factor)[OUTCOME].mean()
    return sorted(str(level) for level, rate in rates.items() if rate in (0.0, 1.0))


def bernoulli_deviance(n: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Deviance of fitting each cell its own mean: -2 sum n [p log p + (1-p) log(1-p)], summed over the last axis."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)
        terms = n * (_xlogx(p) + _xlogx(1 - p))
    return -2 * terms.sum(axis=-1)


def one_factor_explained(data: pd.DataFrame, factor: str) -> float | None:
    """Closed-form explained deviance of `correct ~ C(factor)` (the bootstrap's statistic)."""
    cells = data.groupby(factor)[OUTCOME].agg(["size", "sum"])
    null = bernoulli_deviance(np.array([len(data)]), np.array([data[OUTCOME].sum()]))
    alone = bernoulli_deviance(cells["size"].to_numpy(float), cells["sum"].to_numpy(float))
    return _share(float(null - alone), float(null))


def bootstrap_ratio(data: pd.DataFrame, replicates: int, seed: int) -> dict:
    """Percentile intervals for category/method explained deviance (and for each share), resampling whole tasks.

    Tasks are the sampling unit: all runs of a drawn task (every method, hardware, seed) come
    along, so the interval reflects which tasks happen to be in the suite. Replicates in which
    method explains nothing (one method, or equal rates) give no ratio and are counted.
    """
    notes = []
    tasks = sorted(data["task"].unique())
    methods = sorted(data["method"].unique())
    categories = sorted(data["category"].unique())
    if len(methods) < 2 or len(categories) < 2 or len(tasks) < 2:
        notes.append("bootstrap skipped: it needs at least two tasks, two categories and two methods")
        return _empty_ratio(0, notes)
    t_index = {t: i for i, t in enumerate(tasks)}
    ti = data["task"].map(t_index).to_numpy()
    mi = data["method"].map({m: i for i, m in enumerate(methods)}).to_numpy()
    y = data[OUTCOME].to_numpy(float)
    task_cat = data.groupby("task")["category"].first().reindex(tasks).map({c: i for i, c in enumerate(categories)})
    n_tm = np.zeros((len(tasks), len(methods)))
    s_tm = np.zeros_like(n_tm)
    np.add.at(n_tm, (ti, mi), 1.0)
    np.add.at(s_tm, (ti, mi), y)
    in_cat = np.eye(len(categories))[task_cat.to_numpy()]  # tasks x categories
    weights = np.random.default_rng(seed).multinomial(len(tasks), np.full(len(tasks), 1 / len(tasks)), size=replicates)
    n_m, s_m = weights @ n_tm, weights @ s_tm  # replicates x methods
    n_c, s_c = weights @ (n_tm.sum(1)[:, None] * in_cat), weights @ (s_tm.sum(1)[:, None] * in_cat)
    null = bernoulli_deviance(n_m.sum(1, keepdims=True), s_m.sum(1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        cat = (null - bernoulli_deviance(n_c, s_c)) / null
        meth = (null - bernoulli_deviance(n_m, s_m)) / null
        ratio = cat / meth
        per_df = (cat / ((n_c > 0).sum(1) - 1)) / (meth / ((n_m > 0).sum(1) - 1))
    out = {"replicates": replicates, "level": CI_LEVEL, "seed": seed, "notes": notes}
    every = np.ones_like(meth, dtype=bool)
    for name, values, usable in (("ci", ratio, meth > 0), ("per_df_ci", per_df, meth > 0),
                                 ("category_ci", cat, every), ("method_ci", meth, every)):  # fmt: skip
        valid = values[np.isfinite(values) & usable]
        out[f"{name}_valid_replicates"] = int(valid.size)
        if valid.size < MIN_VALID_SHARE * replicates:
            out[name] = None
            notes.append(f"bootstrap {name}: only {valid.size} of {replicates} replicates gave a finite ratio; no interval")
        else:
            tail = (1 - CI_LEVEL) / 2 * 100
            out[name] = [float(np.percentile(valid, tail)), float(np.percentile(valid, 100 - tail))]
    return out


def _xlogx(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0)


def _share(part: float, whole: float) -> float | None:
    return float(part / whole) if whole > 0 else None


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0 or not math.isfinite(a / b):
        return None
    return float(a / b)


def _empty_factor() -> dict:
    return {"explained_deviance": None, "df": 0, "lr_test": None, "drop_from_full": None}


def _empty_ratio(replicates: int, notes: list | None = None) -> dict:
    return {"replicates": replicates, "ci": None, "per_df_ci": None, "category_ci": None, "method_ci": None,
            "category_over_method": None, "per_df": None, "notes": notes or []}  # fmt: skip
