"""`python -m analysis report`: runs out of MLflow -> runs.csv, deviance.json, tables, plots, report.md.

The output directory is then logged to MLflow as an analysis run (tag kbx.role=analysis) in the
same experiment, with the selection it covers as parameters; kbx's loaders read only job and task
runs, so analysis runs never feed back into a later report.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import deviance, headline, load, passk, plots, tables

log = logging.getLogger(__name__)

FAST_P_GRID = np.linspace(0.0, 3.0, 61)  # p values for the fast_p curves
PARAM_CHARS = 6000  # MLflow's limit on a parameter value is 6000 characters
PERCENT_COLUMNS = ("compile_rate", "correct_rate", "round_compile_rate", "round_correct_rate", "slower_than_eager",
                   "share_failing_all_methods", *[f"fast_{p:g}" for p in tables.FAST_P], "pass_at_k",
                   *[f"fast_{p:g}_at_k" for p in passk.FAST_P])  # fmt: skip


def report(tracking_uri: str, experiment: str, filter_string: str, out: Path, log_to_mlflow: bool = True) -> dict:
    """Write the whole report for the selected runs into `out`; returns a short summary."""
    with _stage("load"):
        frame, selection = load.load(tracking_uri, experiment, filter_string)
    if frame.empty:
        raise load.AnalysisError(f"no kbx task runs in experiment {experiment!r}"
                                 + (f" match the filter {filter_string!r}" if filter_string else ""))  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    outcomes = load.outcomes(frame)
    with _stage("write runs.csv"):
        frame.to_csv(out / "runs.csv", index=False)
        outcomes.to_csv(out / "outcomes.csv", index=False)
    with _stage("deviance model"):
        dev = deviance.analyse(outcomes)
    (out / "deviance.json").write_text(json.dumps(_json_safe(dev), indent=1) + "\n")
    with _stage("tables"):
        built = build_tables(frame, outcomes)
        for name, table in built.items():
            write_table(table, out / "tables", name)
    with _stage("plots"):
        figures = draw(built, outcomes, out / "plots")
    heads = headline.headline(frame, outcomes, dev, built["cross_hardware"])
    (out / "headline.json").write_text(json.dumps(_json_safe(heads), indent=1) + "\n")
    notes = degenerate_notes(frame, outcomes, built) + dev["notes"]
    (out / "report.md").write_text(markdown(selection, frame, dev, built, figures, heads, notes, out))
    summary = {"task_runs": selection.n_task_runs, "jobs": len(selection.job_run_ids), "out": str(out),
               "category_explained_deviance": dev["category"]["explained_deviance"],
               "method_explained_deviance": dev["method"]["explained_deviance"], "notes": len(notes)}  # fmt: skip
    if log_to_mlflow:
        with _stage("log to MLflow"):
            summary["analysis_run_id"] = log_run(selection, dev, out)
    return summary


@contextlib.contextmanager
def _stage(name: str):
    """Log how long a stage took, wall and CPU: the benchmark's budget is spent across all of them, and on a
    shared machine the CPU time is the steadier of the two."""
    start, cpu = time.perf_counter(), time.process_time()
    yield
    log.info("%s: %.2f s (cpu %.2f s)", name, time.perf_counter() - start, time.process_time() - cpu)


def build_tables(frame: pd.DataFrame, outcomes: pd.DataFrame) -> dict[str, pd.DataFrame]:
    long = tables.category_method(outcomes)
    return {
        "category_method": long,
        "correct_rate_by_category_method": tables.category_method_wide(long, "correct_rate").reset_index(),
        "compile_rate_by_category_method": tables.category_method_wide(long, "compile_rate").reset_index(),
        "failing_all_methods": tables.failing_everywhere(outcomes),
        "fast_p": tables.fast_p(outcomes),
        "fast_p_curve": tables.fast_p_curve(outcomes, FAST_P_GRID),
        "speedup_distribution": tables.speedup_distribution(outcomes),
        "trajectory": tables.trajectory(frame),
        "trajectory_by_method": tables.trajectory(frame, by=["method"]),
        "transitions": tables.transitions(frame),
        "cross_hardware": tables.cross_hardware(outcomes),
        "quantization": tables.quantization(outcomes),
        "pass_at_k": passk.table(frame),
    }


def write_table(table: pd.DataFrame, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / f"{name}.csv", index=False)
    (folder / f"{name}.md").write_text(tables.to_markdown(table, percent=_percent(name)) + "\n")


def _percent(name: str) -> tuple:
    """Rate columns print as percentages, except in the wide grids, where every method column is a rate."""
    return ("*",) if name.endswith("_by_category_method") else PERCENT_COLUMNS


def draw(built: dict, outcomes: pd.DataFrame, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    untimed = f"no timed kernels ({tables.untimed_reason(outcomes)})"
    return {
        "trajectory": plots.trajectory(built["trajectory_by_method"], folder / "trajectory.png", untimed),
        "category": plots.category_correctness(built["category_method"], folder / "category_correctness.png"),
        "speedups": plots.speedup_histogram(outcomes, folder / "speedup_distribution.png", untimed),
        "fast_p": plots.fast_p_curves(built["fast_p_curve"], folder / "fast_p.png"),
    }


def degenerate_notes(frame: pd.DataFrame, outcomes: pd.DataFrame, built: dict) -> list[str]:
    """Everything about the selection that limits what the report can say, in plain words."""
    notes = []
    for factor in ("category", "method", "hardware"):
        levels = outcomes[factor].nunique()
        if levels < 2:
            notes.append(f"a single {factor} ({outcomes[factor].iloc[0]}): comparisons across {factor} are empty")
    cells = outcomes["category"].nunique() * outcomes["method"].nunique()
    filled = len(built["category_method"])
    if filled < cells:
        notes.append(f"{cells - filled} of {cells} category x method cells have no runs (shown as –)")
    fail = built["failing_all_methods"]
    for flag, word in (("all_pass", "every run passes"), ("all_fail", "every run fails")):
        names = list(fail.loc[fail[flag], "category"])
        if names:
            notes.append(f"categories where {word}: {', '.join(map(str, names))}")
    if not outcomes["speedup"].notna().any():
        notes.append(f"no kernel was timed ({tables.untimed_reason(outcomes)}): speedups, fast_p for p > 0, "
                     "the cross-hardware spread and the speedup plots are empty")  # fmt: skip
    if frame["round"].max() == 0:
        notes.append("every run has a single round: there is no iteration trajectory")
    notes += late_starts(frame)
    if built["cross_hardware"].empty and outcomes["speedup"].notna().any():
        notes.append("no kernel was timed on two or more GPUs: no cross-hardware spread")
    if built["quantization"].empty:
        notes.append("no Quantization task runs")
    return notes


def late_starts(frame: pd.DataFrame) -> list[str]:
    """Per iterating method: task runs with no round-0 attempt, which best-so-far rates count as failing until tried."""
    notes = []
    first = frame[frame["attempts"] > 0].groupby("run_id")["round"].min()
    for method, g in frame.groupby("method", observed=True):
        if g["round"].max() == 0:
            continue
        runs = g["run_id"].drop_duplicates()
        late = int((runs.map(first).fillna(np.inf) > 0).sum())
        if late:
            notes.append(f"{method}: {late} of {len(runs)} task runs have no round-0 attempt; best-so-far rates count "
                         "them as failing until their first attempt (the trajectory's `attempted` column; "
                         "`rescued_untried_before` in the transitions)")  # fmt: skip
    return notes


def markdown(selection, frame, dev, built, figures, heads, notes, out: Path) -> str:
    """report.md: the selection, the paper comparison, then each analysis with its table and figure."""
    def rel(path: Path) -> str:
        return str(path.relative_to(out))

    def table(name: str) -> str:
        return tables.to_markdown(built[name], percent=_percent(name))

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# kbx analysis: experiment `{selection.experiment}`", "",
        f"Generated {when} from `{selection.tracking_uri}`"
        + (f", filter `{selection.filter}`" if selection.filter else ", no filter") + ".",
        f"{selection.n_task_runs} task runs from {len(selection.job_run_ids)} jobs; methods "
        f"{', '.join(sorted(frame['method'].unique()))}; hardware {', '.join(sorted(frame['hardware'].unique()))}; "
        f"{frame['category'].nunique()} categories, {frame['task'].nunique()} tasks, rounds 0-{int(frame['round'].max())}. "
        "Per-round rows are in `runs.csv`; one row per task run (its best attempt by the last round) in `outcomes.csv`.",
        "", "## Limits of this selection", "",
        *([f"- {n}" for n in notes] or ["- none"]),
        "", "## The paper's headline numbers and kbx's", "",
        "Each kbx figure is computed from the runs named beside it (full job ids in `headline.json`).", "",
        headline.markdown(heads),
        "", "## Deviance model of correctness", "",
        *deviance_section(dev),
        "", "## Correctness by category and method", "",
        "Correct rate:", "", table("correct_rate_by_category_method"), "",
        "Compile rate:", "", table("compile_rate_by_category_method"), "",
        "Tasks that no method solved:", "", table("failing_all_methods"), "",
        f"![correctness per category]({rel(figures['category'])})",
        "", "## fast_p", "",
        "Share of task runs that are correct and more than p times faster than eager (fast_0 is the correct rate).", "",
        table("fast_p"), "", f"![fast_p curves]({rel(figures['fast_p'])})",
        "", "## pass@k and fast_p@k of sampling methods", "",
        *passk_section(built["pass_at_k"]),
        "", "## Speedup distribution", "", table("speedup_distribution"), "",
        f"![speedup distribution]({rel(figures['speedups'])})",
        "", "## Iteration", "",
        "Best so far after each round (what the method would ship if stopped there), and the round's own attempts:", "",
        table("trajectory"), "",
        "Kernels first correct at round k (rescued; `rescued_untried_before` of them had no attempt before k) against "
        "kernels already correct at round k-1 (persistent):", "",
        table("transitions"), "", f"![trajectory]({rel(figures['trajectory'])})",
        "", "## Cross-hardware speedup spread", "",
        "Per kernel (method x task) timed on two or more GPUs: max / min speedup across GPUs.", "",
        tables.to_markdown(built["cross_hardware"].head(20)),
        "", "## Quantization", "", table("quantization"), "",
    ]  # fmt: skip
    return "\n".join(lines)


def passk_section(table: pd.DataFrame) -> list[str]:
    """The pass@k table, or why there is none."""
    if table.empty:
        return ["No method made several kernels for a task in one round (best_of_n, GEAK's candidates, "
                "KernelAgent's workers), or the runs predate kbx's per-round sample counts: no pass@k."]  # fmt: skip
    return ["Unbiased estimator 1 - C(n-c, k) / C(n, k) over each task run's n judged kernels of a round (c of them "
            "correct, or correct and faster than p x eager for fast_p@k), averaged over the task runs with at least k "
            "(`tasks`); `samples` is their mean n. fast_p@k is empty where nothing was timed (CPU).", "",
            tables.to_markdown(table, percent=PERCENT_COLUMNS)]  # fmt: skip


def deviance_section(dev: dict) -> list[str]:
    """The deviance figures as a table plus the df-aware reading the referee asked for."""
    if not dev.get("models"):
        return ["Not fitted: " + "; ".join(dev["notes"])]
    rows = ["| factor | explained deviance | df | deviance per df | explained above chance | LR chi2 (p) alone | "
            "drop from full model (p) | AIC alone | McFadden R² |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for f in deviance.FACTORS:
        d = dev[f]
        lr, drop = d["lr_test"], d["drop_from_full"]
        rows.append(f"| {f} | {_pct(d['explained_deviance'])} | {d['df']} | {_num(d['deviance_per_df'])} | "
                    f"{_pct(d['explained_above_chance'])} | {_num(lr['chi2'])} ({_p(lr['p'])}) | "
                    f"{_num(drop['deviance'])} ({_p(drop['p'])}) | {_num(d['aic'])} | "
                    f"{_num(d['mcfadden_r2'], 3)} |")  # fmt: skip
    ratio = dev["ratio"]
    ci = ratio.get("ci")
    per_df_ci = ratio.get("per_df_ci")
    return [
        f"Outcome: {dev['outcome']}; {dev['n']} task runs over {dev['n_tasks']} tasks, {dev['n_correct']} correct. "
        f"Null deviance {dev['null_deviance']:.1f}; full model `correct ~ C(category) + C(method)` explains "
        f"{_pct(dev['full']['explained_deviance'])} (McFadden R² {_num(dev['full']['mcfadden_r2'], 3)}, "
        f"AIC {_num(dev['full']['aic'])}).",
        "", *rows, "",
        f"Category / method explained deviance: {_num(ratio['category_over_method'])} "
        f"(95% bootstrap interval over tasks: {_interval(ci)}; {ratio['replicates']} replicates). "
        f"Per degree of freedom: {_num(ratio['per_df'])} ({_interval(per_df_ci)}). "
        "A factor with k df removes about k units of deviance by chance alone, so the per-df ratio and the share "
        "above chance are the fair comparison between a 14-df category and a 4-df method.",
    ]  # fmt: skip


def log_run(selection, dev: dict, out: Path) -> str:
    """The output directory as an MLflow run tagged kbx.role=analysis, in the analysed experiment."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=selection.tracking_uri)
    run = client.create_run(selection.experiment_id, run_name="analysis",
                            tags={"kbx.role": "analysis", "kbx.source_experiment": selection.experiment})  # fmt: skip
    params = {"filter": selection.filter or "none", "n_task_runs": selection.n_task_runs,
              "n_jobs": len(selection.job_run_ids),
              "job_run_ids": ",".join(selection.job_run_ids)[:PARAM_CHARS]}  # fmt: skip
    values = {"category_explained_deviance": dev["category"]["explained_deviance"],
              "method_explained_deviance": dev["method"]["explained_deviance"],
              "category_over_method": dev["ratio"]["category_over_method"]}  # fmt: skip
    metrics = [Metric(k, float(v), 0, 0) for k, v in values.items() if v is not None and math.isfinite(v)]
    client.log_batch(run.info.run_id, params=[Param(k, str(v)) for k, v in params.items()], metrics=metrics)
    client.log_artifacts(run.info.run_id, str(out))
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


def _json_safe(value):
    """NaN/inf -> null, numpy scalars -> Python numbers (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _pct(v) -> str:
    return "–" if v is None else f"{v:.1%}"


def _num(v, digits: int = 2) -> str:
    return "–" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{digits}f}"


def _p(v) -> str:
    return "–" if v is None else f"p={v:.3g}"


def _interval(ci) -> str:
    return "not available" if not ci else f"{ci[0]:.2f}–{ci[1]:.2f}"
