"""The report's tables as pandas frames, each computed from the tidy runs or their outcomes.

`frame` is `load.load`'s per-round frame; `outcomes` is `load.outcomes(frame)` (one row per task
run, best attempt by the last round). Rates divide by every task run in the group, as kbx's
summary does: a run with nothing correct counts as a failure, never as missing. A quantity that
needs timing is NaN where nothing was timed (CPU runs), never 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

FAST_P = (0.0, 1.0, 1.5, 2.0)  # the paper's fast_p thresholds
EAGER = 1.0  # speedup of PyTorch eager against itself: below this a kernel is slower
QUANTIZATION = "quantization"  # category name, compared case-insensitively
GROUP = ["method", "hardware"]
CPU_HARDWARE = "cpu"  # the profile whose runs are judged for correctness only (no timing)


def untimed_reason(rows: pd.DataFrame) -> str:
    """Why `rows` hold no speedup, in words that fit the hardware they ran on: on CPU runs nothing is
    timed by design; on a GPU every correct kernel is timed, so there none was correct (or timing failed)."""
    hardware = set(rows["hardware"].astype(str)) if "hardware" in rows else set()
    if hardware and hardware <= {CPU_HARDWARE}:
        return "CPU runs check correctness only"
    gpus = ", ".join(sorted(hardware - {CPU_HARDWARE})) or "these runs"
    return f"on {gpus}: no kernel was correct, or its timing failed"


def category_method(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Compile and correct rates per category x method (the paper's Table 3), long form."""
    grouped = outcomes.groupby(["category", "method"], observed=True)
    table = grouped.agg(runs=("run_id", "size"), tasks=("task", "nunique"), compile_rate=("compiled", "mean"),
                        correct_rate=("correct", "mean"))  # fmt: skip
    return table.reset_index()


def category_method_wide(long: pd.DataFrame, value: str) -> pd.DataFrame:
    """One rate as a category x method grid; a combination never run is NaN (an empty cell)."""
    return long.pivot(index="category", columns="method", values=value) if not long.empty else pd.DataFrame()


def failing_everywhere(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per category: tasks that no method got right, and whether the category is all-pass or all-fail."""
    per_task = outcomes.groupby(["category", "task"], observed=True)["correct"].max().reset_index()
    table = per_task.groupby("category", observed=True).agg(tasks=("task", "size"), solved=("correct", "sum"))
    table["failing_all_methods"] = table["tasks"] - table["solved"]
    table["share_failing_all_methods"] = table["failing_all_methods"] / table["tasks"]
    rates = outcomes.groupby("category", observed=True)["correct"].mean()
    table["all_pass"] = rates.reindex(table.index) == 1.0
    table["all_fail"] = rates.reindex(table.index) == 0.0
    return table.reset_index().astype({"solved": int, "failing_all_methods": int})


def fast_p(outcomes: pd.DataFrame, thresholds=FAST_P) -> pd.DataFrame:
    """Share of task runs that are correct and faster than p x eager, per method x hardware.

    fast_0 is the correct rate (every correct kernel has a positive speedup). For p > 0 a group
    with no timed kernel gets NaN: on CPU kbx checks correctness only.
    """
    rows = []
    for (method, hardware), g in outcomes.groupby(GROUP, observed=True):
        timed = g["speedup"].notna() & (g["correct"] > 0)
        row = {"method": method, "hardware": hardware, "runs": len(g), "timed": int(timed.sum())}
        for p in thresholds:
            key = f"fast_{p:g}"
            if p == 0:
                row[key] = g["correct"].mean()
            else:
                row[key] = (timed & (g["speedup"] > p)).sum() / len(g) if timed.any() else np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=[*GROUP, "runs", "timed", *[f"fast_{p:g}" for p in thresholds]])


def fast_p_curve(outcomes: pd.DataFrame, grid: np.ndarray) -> pd.DataFrame:
    """fast_p over a grid of p per method (pooled over hardware), for the plot."""
    rows = []
    for method, g in outcomes.groupby("method", observed=True):
        s = g["speedup"].where(g["correct"] > 0)
        if s.notna().any():
            rows += [{"method": method, "p": p, "fast_p": float((s > p).sum() / len(g))} for p in grid]
    return pd.DataFrame(rows, columns=["method", "p", "fast_p"])


def speedup_distribution(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Geometric mean, median and share slower than eager of correct, timed kernels; 'all' pools every group."""
    rows = [_speedups({"method": m, "hardware": h}, g) for (m, h), g in outcomes.groupby(GROUP, observed=True)]
    rows.append(_speedups({"method": "all", "hardware": "all"}, outcomes))
    return pd.DataFrame(rows)


def _speedups(label: dict, g: pd.DataFrame) -> dict:
    correct = g[g["correct"] > 0]
    s = correct["speedup"].dropna()
    s = s[s > 0]
    return {**label, "correct": len(correct), "timed": len(s),
            "geomean": float(np.exp(np.log(s).mean())) if len(s) else np.nan,
            "mean": float(s.mean()) if len(s) else np.nan, "median": float(s.median()) if len(s) else np.nan,
            "slower_than_eager": float((s < EAGER).mean()) if len(s) else np.nan,
            "min": float(s.min()) if len(s) else np.nan, "max": float(s.max()) if len(s) else np.nan}  # fmt: skip


def trajectory(frame: pd.DataFrame, by=GROUP) -> pd.DataFrame:
    """Per round: best-so-far compile and correct rates and speedups, and the round's own rates.

    Best-so-far is what a method would ship if stopped after that round, so the rates can only
    rise; the mean speedup can fall when newly rescued kernels are slower than the ones already
    correct (the paper's finding for GEAK).
    """
    rows = []
    for key, g in frame.groupby([*by, "round"], observed=True):
        tried = g[g["attempts"] > 0]
        s = g["speedup"].where(g["correct"] > 0).dropna()
        rows.append({**dict(zip([*by, "round"], key, strict=True)), "runs": len(g), "attempted": len(tried),
                     "compile_rate": g["compiled"].fillna(0).mean(),
                     "correct_rate": g["correct"].fillna(0).mean(),
                     "round_compile_rate": tried["round_compiled"].mean() if len(tried) else np.nan,
                     "round_correct_rate": tried["round_correct"].mean() if len(tried) else np.nan,
                     "timed": len(s), "mean_speedup": s.mean() if len(s) else np.nan,
                     "geomean_speedup": float(np.exp(np.log(s[s > 0]).mean())) if (s > 0).any() else np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def transition_kinds(frame: pd.DataFrame, by=GROUP) -> pd.DataFrame:
    """One row per task run and round k >= 1: its kind at k (rescued, persistent or other).

    `tried_before` says whether the run had an attempt in some round before k: a run rescued at k
    without one (a method that first tried the task at k, or stored predictions lacking the early
    rounds) was never failing a kernel of its own, only missing one.
    """
    cols = ["run_id", "round", "correct", "speedup"]
    now = frame[[*by, *cols]].copy()
    before = frame[["run_id", "round", "correct", "attempts"]].sort_values(["run_id", "round"], kind="stable")
    before = before.assign(tried_before=before.groupby("run_id")["attempts"].cumsum() > 0, round=before["round"] + 1)
    before = before.drop(columns="attempts").rename(columns={"correct": "was_correct"})
    joined = now.merge(before, on=["run_id", "round"], how="inner")
    joined["kind"] = np.select([(joined["was_correct"] > 0) & (joined["correct"] > 0),
                                ~(joined["was_correct"] > 0) & (joined["correct"] > 0)],
                               ["persistent", "rescued"], "other")  # fmt: skip
    return joined


def transitions(frame: pd.DataFrame, by=GROUP) -> pd.DataFrame:
    """Per round k >= 1: kernels rescued at k (first correct) against those correct since k-1.

    Speedups are each group's best-so-far at round k. `rescued_untried_before` counts the rescued
    runs that had no attempt before k (see `transition_kinds`).
    """
    joined = transition_kinds(frame, by)
    rows = []
    for key, g in joined.groupby([*by, "round"], observed=True):
        row = dict(zip([*by, "round"], key, strict=True))
        row["transition"] = f"{row['round'] - 1}->{row['round']}"
        for kind in ("rescued", "persistent"):
            part = g[g["kind"] == kind]
            s = part["speedup"].dropna()
            row.update({kind: len(part), f"{kind}_timed": len(s), f"{kind}_mean_speedup": s.mean() if len(s) else np.nan})
            if kind == "rescued":
                row["rescued_untried_before"] = int((~part["tried_before"]).sum())
        rows.append(row)
    columns = [*by, "round", "transition", "rescued", "rescued_untried_before", "rescued_timed", "rescued_mean_speedup",
               "persistent", "persistent_timed", "persistent_mean_speedup"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def cross_hardware(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per method x task timed on two or more GPUs: the spread of its speedup (max / min).

    Several runs on one GPU (seeds) are pooled by their geometric mean first.
    """
    timed = outcomes[(outcomes["correct"] > 0) & (outcomes["speedup"] > 0)]
    columns = ["method", "task", "gpus", "min_speedup", "max_speedup", "ratio", "fastest_on", "slowest_on"]
    per_hw = timed.assign(log=np.log(timed["speedup"])).groupby(["method", "task", "hardware"], observed=True)["log"].mean()
    per_hw = np.exp(per_hw).rename("speedup").reset_index()
    if per_hw.empty:
        return pd.DataFrame(columns=columns)
    kernel = per_hw.groupby(["method", "task"], observed=True)["speedup"]
    table = kernel.agg(gpus="size", min_speedup="min", max_speedup="max")
    table["fastest_on"] = per_hw.loc[kernel.idxmax(), "hardware"].to_numpy()
    table["slowest_on"] = per_hw.loc[kernel.idxmin(), "hardware"].to_numpy()
    table["ratio"] = table["max_speedup"] / table["min_speedup"]
    table = table[table["gpus"] >= 2].reset_index()[columns]
    return table.sort_values("ratio", ascending=False, kind="stable").reset_index(drop=True)


def quantization(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The quantization category per method x hardware: correct out of total, compiled, fast_1."""
    q = outcomes[outcomes["category"].str.lower() == QUANTIZATION]
    rows = []
    for (method, hardware), g in q.groupby(GROUP, observed=True):
        timed = g["speedup"].notna() & (g["correct"] > 0)
        rows.append({"method": method, "hardware": hardware, "runs": len(g), "tasks": g["task"].nunique(),
                     "compiled": int(g["compiled"].sum()), "correct": int(g["correct"].sum()),
                     "correct_of_total": f"{int(g['correct'].sum())}/{len(g)}",
                     "fast_1": (timed & (g["speedup"] > 1)).sum() / len(g) if timed.any() else np.nan})  # fmt: skip
    return pd.DataFrame(rows, columns=[*GROUP, "runs", "tasks", "compiled", "correct", "correct_of_total", "fast_1"])


def to_markdown(table: pd.DataFrame, percent=(), digits: int = 2) -> str:
    """A GitHub markdown table; NaN shows as an en dash (an empty cell or an unmeasured value).

    Columns named in `percent` print as percentages; "*" makes every float column one.
    """
    if table.empty:
        return "_(no rows)_"
    shown = table.copy()
    for col in shown.columns:
        if col in percent or ("*" in percent and pd.api.types.is_float_dtype(shown[col])):
            shown[col] = shown[col].map(lambda v: "–" if pd.isna(v) else f"{v:.1%}")
        elif pd.api.types.is_float_dtype(shown[col]):
            shown[col] = shown[col].map(lambda v: "–" if pd.isna(v) else f"{v:.{digits}f}")
        else:
            shown[col] = shown[col].map(lambda v: "–" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    header = "| " + " | ".join(map(str, shown.columns)) + " |"
    rule = "|" + "|".join("---" for _ in shown.columns) + "|"
    body = ["| " + " | ".join(row) + " |" for row in shown.astype(str).itertuples(index=False, name=None)]
    return "\n".join([header, rule, *body])
