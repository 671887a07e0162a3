"""The paper's headlines computed from a records CSV, one figure per claim and GPU, each with its interval.

Every figure is a `Figure`: the paper's value, kbx's value, a 95 % interval (analysis.intervals),
the task runs and jobs it came from, and, when kbx cannot compute it from the records (one GPU,
nothing timed, no iterating method), the reason in words. `analysis.findings_doc` renders them
as docs/FINDINGS.md; the tests look figures up by `key`.

The statistics are the report's own (analysis.tables, analysis.deviance, analysis.headline):
this module only groups them per GPU and attaches intervals.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from analysis import deviance, headline, intervals, load, passk, tables

ALL_GPUS = "all"  # the hardware label of a figure computed across GPUs
NO_CODE = "no_code"  # kbx.core.record.Status.NO_CODE: the method had no kernel for the task (stored predictions lack it)


@dataclasses.dataclass(frozen=True)
class Figure:
    """One headline figure of kbx's next to the paper's, and where it came from."""

    key: str  # stable name, e.g. "geak_compile_best_r0"
    claim: str
    hardware: str
    paper: float | None
    value: float | None
    interval: tuple[float, float] | None
    unit: str  # share | times | ratio
    task_runs: int
    jobs: tuple[str, ...]
    why_missing: str | None = None
    detail: str = ""  # which runs, in words

    @property
    def agrees(self) -> bool | None:
        """Whether the paper's value lies inside kbx's interval; None when there is nothing to compare."""
        if self.paper is None or self.value is None or self.interval is None:
            return None
        low, high = self.interval
        return low - _SLACK <= self.paper <= high + _SLACK


_SLACK = 1e-9  # interval ends printed as equal to the paper's value count as inside


def figure(key: str, claim: str, hardware: str, paper, value, interval, unit: str, rows: pd.DataFrame,
           why: str | None = None, detail: str = "") -> Figure:  # fmt: skip
    """A Figure from the rows it was computed over; a non-finite value becomes missing, with `why`."""
    if value is not None and not np.isfinite(value):
        value = None
    if value is None:
        interval, why = None, why or "not defined for these records"
    jobs = tuple(sorted(rows["job_run_id"].unique())) if len(rows) else ()
    runs = int(rows["run_id"].nunique()) if len(rows) else 0
    return Figure(key, claim, hardware, paper, None if value is None else float(value), interval, unit, runs, jobs,
                  None if value is not None else why, detail)  # fmt: skip


def compute(frame: pd.DataFrame) -> dict:
    """Every finding of the records: figures, per-GPU deviance fits and tables, and notes on what is missing."""
    gpus = sorted(frame["hardware"].unique())
    result = {"gpus": gpus, "figures": [], "deviance": {}, "rounds": {}, "slower": {}, "pass_at_k": {}, "notes": []}
    for gpu in gpus:
        rows = frame[frame["hardware"] == gpu]
        outcomes = load.outcomes(rows)
        common = common_tasks(outcomes)
        dev = deviance.analyse(common)
        result["deviance"][gpu] = dev
        result["figures"] += deviance_figures(dev, common, gpu)
        kernels = rows[rows["status"] != NO_CODE]
        round_figs, round_table = geak_rounds(kernels, gpu)
        result["figures"] += round_figs
        result["rounds"][gpu] = round_table
        result["figures"] += rescued_persistent(kernels, gpu)
        slower_figs, slower_table = slower_than_eager(outcomes, gpu)
        result["figures"] += slower_figs
        result["slower"][gpu] = slower_table
        result["figures"] += quantization(outcomes[outcomes["status"] != NO_CODE], gpu)
        result["figures"].append(fusion_fail_all(outcomes, gpu))
        result["pass_at_k"][gpu] = passk.table(kernels)
    spread_figs, spread = cross_gpu(load.outcomes(frame), gpus)
    result["figures"] += spread_figs
    result.update(spread)
    per_cell = frame.groupby(["method", "hardware"])["job_run_id"].nunique()
    for (method, gpu), jobs in per_cell[per_cell > 1].items():
        result["notes"].append(f"{method} on {gpu} comes from {jobs} jobs: their task runs are pooled, so a task "
                               "judged in several jobs counts once per job (export with --filter to keep one)")  # fmt: skip
    if len(gpus) < 2:
        result["notes"].append(f"the records hold one GPU ({', '.join(gpus)}): the cross-GPU spread cannot be "
                               "computed; run the same jobs on a second GPU and export both stores")  # fmt: skip
    return result


def common_tasks(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The task runs of the tasks every method had a kernel for.

    Stored predictions cover only the tasks the GEAK corpus holds; kbx records the others as
    `no_code`. Counting them as GEAK's failures would credit the method factor with the corpus's
    gaps, so the deviance model compares methods over the tasks they all attempted.
    """
    methods = outcomes["method"].nunique()
    tried = outcomes[outcomes["status"] != NO_CODE].groupby("task")["method"].nunique()
    return outcomes[outcomes["task"].isin(tried[tried == methods].index)]


def deviance_figures(dev: dict, outcomes: pd.DataFrame, gpu: str) -> list[Figure]:
    """Category and method explained deviance with their task-bootstrap intervals, and their ratios."""
    ratio = dev["ratio"]
    cat, meth = dev["category"], dev["method"]
    methods = ", ".join(sorted(outcomes["method"].unique()))
    detail = (f"binomial GLM of correct over {outcomes['task'].nunique()} tasks that every method ({methods}) "
              f"had a kernel for, on {gpu}")  # fmt: skip
    why = "; ".join(dev["notes"]) or None
    return [
        figure("category_explained", "category explains deviance in correctness", gpu,
               headline.PAPER_CATEGORY_EXPLAINED, cat["explained_deviance"], _tuple(ratio.get("category_ci")),
               "share", outcomes, why, detail),
        figure("method_explained", "method explains deviance in correctness", gpu, headline.PAPER_METHOD_EXPLAINED,
               meth["explained_deviance"], _tuple(ratio.get("method_ci")), "share", outcomes, why, detail),
        figure("category_over_method", "category / method explained deviance", gpu,
               _paper_ratio(), ratio.get("category_over_method"), _tuple(ratio.get("ci")), "ratio", outcomes, why,
               detail),
        figure("category_over_method_per_df", "category / method explained deviance per degree of freedom", gpu,
               None, ratio.get("per_df"), _tuple(ratio.get("per_df_ci")), "ratio", outcomes, why, detail),
    ]  # fmt: skip


def _paper_ratio() -> float:
    return headline.PAPER_CATEGORY_EXPLAINED / headline.PAPER_METHOD_EXPLAINED


def geak_rounds(rows: pd.DataFrame, gpu: str) -> tuple[list[Figure], pd.DataFrame]:
    """GEAK's compile rate and mean speedup of correct kernels per round, best so far and round's own."""
    method = headline.iterating_method(rows)
    if method is None:
        why = "no method ran more than one round"
        figs = [figure(f"geak_{what}_r{k}", f"GEAK {what}", gpu, paper, None, None, unit, rows.iloc[:0], why)
                for what, unit, papers in _ROUND_CLAIMS for k, paper in enumerate(papers)]  # fmt: skip
        return figs, pd.DataFrame()
    runs = rows[rows["method"] == method]
    table = tables.trajectory(runs, by=["method"])
    last = int(table["round"].max())
    figs = []
    for _, r in table.iterrows():
        k = int(r["round"])
        at = runs[runs["round"] == k]
        tried = at[at["attempts"] > 0]
        paper = {0: 0, last: 1}.get(k)
        pick = (lambda pair: pair[paper]) if paper is not None else (lambda pair: None)
        pooled = f"method {method}, round {k}"
        figs.append(figure(f"geak_compile_best_r{k}", f"GEAK compile rate after round {k}, best so far", gpu,
                           pick(headline.PAPER_GEAK_COMPILE), r["compile_rate"],
                           intervals.clopper_pearson(int(at["compiled"].fillna(0).sum()), len(at)), "share", at,
                           detail=f"{pooled}: every task run ({len(tried)} of {len(at)} tried this round)"))
        figs.append(figure(f"geak_compile_own_r{k}", f"GEAK compile rate of round {k}'s own attempts", gpu,
                           pick(headline.PAPER_GEAK_COMPILE), r["round_compile_rate"],
                           intervals.clopper_pearson(int(tried["round_compiled"].sum()), len(tried)), "share", tried,
                           f"no attempt in round {k}", f"{pooled}: the task runs that tried it"))
        figs.append(figure(f"geak_speedup_r{k}", f"GEAK mean speedup of correct kernels after round {k}", gpu,
                           pick(headline.PAPER_GEAK_SPEEDUP), r["mean_speedup"], _mean_interval(at), "times", at,
                           f"no timed kernels ({tables.untimed_reason(at)})", f"{pooled}: correct kernels, best so far"))
    return figs, table  # fmt: skip


_ROUND_CLAIMS = (("compile_best", "share", headline.PAPER_GEAK_COMPILE),
                 ("compile_own", "share", headline.PAPER_GEAK_COMPILE),
                 ("speedup", "times", headline.PAPER_GEAK_SPEEDUP))  # fmt: skip


def _mean_interval(rows: pd.DataFrame) -> tuple[float, float] | None:
    """Task bootstrap of the mean speedup of the correct, timed kernels among `rows`."""
    timed = rows[(rows["correct"] > 0) & rows["speedup"].notna()]
    per_task = timed.groupby("task")["speedup"].agg(["sum", "size"])
    return intervals.task_bootstrap(per_task["sum"].to_numpy(), per_task["size"].to_numpy())


def rescued_persistent(rows: pd.DataFrame, gpu: str) -> list[Figure]:
    """Mean speedup of kernels first correct at round k against kernels correct since k-1 (pooled over k)."""
    method = headline.iterating_method(rows)
    claims = (("rescued", "mean speedup of kernels rescued by a later round", headline.PAPER_RESCUED_SPEEDUP),
              ("persistent", "mean speedup of kernels correct since the round before",
               headline.PAPER_PERSISTENT_SPEEDUP))  # fmt: skip
    if method is None:
        return [figure(f"{kind}_speedup", f"GEAK {claim}", gpu, paper, None, None, "times", rows.iloc[:0],
                       "no method ran more than one round") for kind, claim, paper in claims]  # fmt: skip
    runs = rows[rows["method"] == method]
    kinds = tables.transition_kinds(runs, by=["method"])
    figs = []
    for kind, claim, paper in claims:
        part = kinds[kinds["kind"] == kind]
        timed = part[part["speedup"].notna()]
        value = timed["speedup"].mean() if len(timed) else None
        per_task = timed.merge(runs[["run_id", "task"]].drop_duplicates(), on="run_id").groupby("task")["speedup"]
        sums = per_task.agg(["sum", "size"])
        why = f"no timed {kind} kernels" + ("" if len(part) else f" (no {kind} kernel at all)")
        figs.append(figure(f"{kind}_speedup", f"GEAK {claim}", gpu, paper, value,
                           intervals.task_bootstrap(sums["sum"].to_numpy(), sums["size"].to_numpy()), "times",
                           runs[runs["run_id"].isin(part["run_id"])], why,
                           f"method {method}: {len(part)} (kernel, round) pairs, {len(timed)} timed"))  # fmt: skip
    return figs


def slower_than_eager(outcomes: pd.DataFrame, gpu: str) -> tuple[list[Figure], pd.DataFrame]:
    """Per method: the share of correct, timed kernels slower than PyTorch eager."""
    figs, table = [], []
    for method, g in outcomes.groupby("method", observed=True):
        timed = g[(g["correct"] > 0) & (g["speedup"] > 0)]
        slower = int((timed["speedup"] < tables.EAGER).sum())
        value = slower / len(timed) if len(timed) else None
        figs.append(figure(f"slower_than_eager_{method}", f"correct kernels slower than eager ({method})", gpu,
                           headline.PAPER_SLOWER_THAN_EAGER, value, intervals.clopper_pearson(slower, len(timed)),
                           "share", timed, f"no timed kernels ({tables.untimed_reason(g)})",
                           f"method {method}: {slower} of {len(timed)} correct, timed kernels"))  # fmt: skip
        table.append({"method": method, "task_runs": len(g), "correct": int((g["correct"] > 0).sum()),
                      "timed": len(timed), "slower_than_eager": value,
                      "median_speedup": timed["speedup"].median() if len(timed) else np.nan})  # fmt: skip
    return figs, pd.DataFrame(table)


def quantization(outcomes: pd.DataFrame, gpu: str) -> list[Figure]:
    """Per method: the share of Quantization task runs judged correct (the paper: 0 of 30), over the task runs
    the method had a kernel for (`compute` leaves out `no_code`: stored predictions lack most tasks)."""
    q = outcomes[outcomes["category"].str.lower() == tables.QUANTIZATION]
    correct_of, total = headline.PAPER_QUANTIZATION
    paper, of_paper = correct_of / total, f"paper: {correct_of} of {total}"
    if q.empty:
        return [figure("quantization_correct", f"Quantization task runs correct ({of_paper})", gpu, paper, None, None,
                       "share", q, "no Quantization task run with a kernel in the records")]  # fmt: skip
    figs = []
    for method, g in q.groupby("method", observed=True):
        correct = int((g["correct"] > 0).sum())
        figs.append(figure(f"quantization_correct_{method}", f"Quantization task runs correct ({method}; {of_paper})",
                           gpu, paper, correct / len(g), intervals.clopper_pearson(correct, len(g)), "share", g,
                           detail=f"method {method}: {correct} of {len(g)} Quantization task runs"))  # fmt: skip
    return figs


def fusion_fail_all(outcomes: pd.DataFrame, gpu: str) -> Figure:
    """The share of Fusion tasks that no method got right."""
    fusion = outcomes[outcomes["category"].str.lower() == headline.FUSION]
    if fusion.empty:
        return figure("fusion_fail_all", "Fusion tasks failing under every method", gpu, headline.PAPER_FUSION_FAIL_ALL,
                      None, None, "share", fusion, "no Fusion task runs in the records")  # fmt: skip
    solved = fusion.groupby("task")["correct"].max()
    failing = int((solved == 0).sum())
    methods = ", ".join(sorted(fusion["method"].unique()))
    return figure("fusion_fail_all", "Fusion tasks failing under every method", gpu, headline.PAPER_FUSION_FAIL_ALL,
                  failing / len(solved), intervals.clopper_pearson(failing, len(solved)), "share", fusion,
                  detail=f"{failing} of {len(solved)} Fusion tasks unsolved by {methods}")  # fmt: skip


def cross_gpu(outcomes: pd.DataFrame, gpus: list[str]) -> tuple[list[Figure], dict]:
    """Spread (max / min) of each kernel's speedup across GPUs: the largest, the median, and per category."""
    spread = tables.cross_hardware(outcomes)
    spread = spread.merge(outcomes[["task", "category"]].drop_duplicates("task"), on="task", how="left")
    found = {"spread": spread, "spread_by_category": _by_category(spread)}
    if spread.empty:
        why = (f"the records hold one GPU ({', '.join(gpus)})" if len(gpus) < 2
               else "no kernel was correct and timed on two or more GPUs")  # fmt: skip
        return [figure("cross_gpu_max", "largest cross-GPU speedup spread (max / min)", ALL_GPUS,
                       headline.PAPER_CROSS_GPU_MAX, None, None, "times", outcomes.iloc[:0], why),
                figure("cross_gpu_geomean", "geometric mean cross-GPU speedup spread (max / min)", ALL_GPUS, None, None,
                       None, "times", outcomes.iloc[:0], why)], found  # fmt: skip
    behind = outcomes[outcomes.set_index(["method", "task"]).index.isin(spread.set_index(["method", "task"]).index)]
    top = spread.iloc[0]
    logs = np.log(spread["ratio"].to_numpy())
    per_task = pd.DataFrame({"task": spread["task"], "log": logs}).groupby("task")["log"].agg(["sum", "size"])
    geo = intervals.task_bootstrap(per_task["sum"].to_numpy(), per_task["size"].to_numpy())
    return [
        figure("cross_gpu_max", "largest cross-GPU speedup spread (max / min)", ALL_GPUS, headline.PAPER_CROSS_GPU_MAX,
               float(spread["ratio"].max()), None, "times", behind[behind["task"] == top["task"]],
               detail=f"{top['method']} on {top['task']}: {top['min_speedup']:.2f}x on {top['slowest_on']}, "
                      f"{top['max_speedup']:.2f}x on {top['fastest_on']}"),
        figure("cross_gpu_geomean", "geometric mean cross-GPU speedup spread (max / min)", ALL_GPUS, None,
               float(np.exp(logs.mean())), None if geo is None else (float(np.exp(geo[0])), float(np.exp(geo[1]))),
               "times", behind, detail=f"{len(spread)} kernels (method x task) timed on {', '.join(gpus)}"),
    ], found  # fmt: skip


def _by_category(spread: pd.DataFrame) -> pd.DataFrame:
    """Per category: kernels, geometric mean and largest spread, and how often each GPU was the faster."""
    if spread.empty:
        return pd.DataFrame(columns=["category", "kernels", "geomean_spread", "max_spread"])
    g = spread.assign(log=np.log(spread["ratio"])).groupby("category", observed=True)
    table = g.agg(kernels=("task", "size"), geomean_spread=("log", "mean"), max_spread=("ratio", "max"))
    table["geomean_spread"] = np.exp(table["geomean_spread"])
    faster = spread.groupby(["category", "fastest_on"], observed=True).size().unstack(fill_value=0)
    table = table.join(faster.add_prefix("faster_on_"))
    return table.reset_index().sort_values("geomean_spread", ascending=False, kind="stable")


def _tuple(ci) -> tuple[float, float] | None:
    return None if not ci else (float(ci[0]), float(ci[1]))
