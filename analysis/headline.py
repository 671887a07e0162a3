"""The paper's headline numbers next to the figures kbx computes, and the runs each came from.

Paper: KernelBench-X (arXiv 2605.04956). Every kbx figure is computed from whatever runs the
report selected; where the runs cannot give one (no timing on CPU, no iterating method, no
quantization task) the row says so instead of showing a number.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis import tables

PAPER_CATEGORY_EXPLAINED = 0.094
PAPER_METHOD_EXPLAINED = 0.033
PAPER_FUSION_FAIL_ALL = 0.72
PAPER_GEAK_COMPILE = (0.523, 0.688)  # first round, last round
PAPER_GEAK_SPEEDUP = (1.58, 1.44)  # mean speedup of correct kernels, first round, last round
PAPER_RESCUED_SPEEDUP = 1.16
PAPER_PERSISTENT_SPEEDUP = 1.58
PAPER_SLOWER_THAN_EAGER = 0.466
PAPER_CROSS_GPU_MAX = 21.4
PAPER_QUANTIZATION = (0, 30)  # correct, total
FUSION = "fusion"
ITERATING_HINT = "geak"  # preferred iterating method, when several iterate
SHOWN_JOB_IDS = 3  # job ids spelled out per row in report.md (all of them are in headline.json)


def iterating_method(frame: pd.DataFrame) -> str | None:
    """The method standing in for GEAK: one whose runs reached round 1 or later (GEAK by name if present)."""
    iterated = frame[(frame["round"] > 0) & (frame["attempts"] > 0)]
    if iterated.empty:
        return None
    methods = sorted(iterated["method"].unique())
    named = [m for m in methods if ITERATING_HINT in m.lower()]
    return named[0] if named else iterated["method"].value_counts().sort_index().idxmax()


def source(rows: pd.DataFrame, what: str = "") -> dict:
    """Which runs a figure came from: counts and parent job ids."""
    jobs = sorted(rows["job_run_id"].unique()) if len(rows) else []
    methods = sorted(rows["method"].unique()) if len(rows) else []
    hardware = sorted(rows["hardware"].unique()) if len(rows) else []
    return {"task_runs": int(rows["run_id"].nunique()) if len(rows) else 0, "jobs": jobs, "methods": methods,
            "hardware": hardware, "subset": what}  # fmt: skip


def headline(frame: pd.DataFrame, outcomes: pd.DataFrame, dev: dict, spread: pd.DataFrame | None = None) -> list[dict]:
    """One entry per paper claim: paper value, kbx value (None when not computable), why, and the runs."""
    rows = [
        _row("category explains deviance in correctness", PAPER_CATEGORY_EXPLAINED,
             dev["category"]["explained_deviance"], "share", source(outcomes, "every task run")),
        _row("method explains deviance in correctness", PAPER_METHOD_EXPLAINED,
             dev["method"]["explained_deviance"], "share", source(outcomes, "every task run")),
    ]  # fmt: skip
    rows.append(_fusion(outcomes))
    rows += _iteration(frame)
    timed = outcomes[(outcomes["correct"] > 0) & (outcomes["speedup"] > 0)]
    slower = float((timed["speedup"] < tables.EAGER).mean()) if len(timed) else None
    rows.append(_row("correct kernels slower than eager", PAPER_SLOWER_THAN_EAGER, slower, "share",
                     source(timed, "correct, timed task runs"), None if len(timed) else "no timed kernels"))  # fmt: skip
    spread = tables.cross_hardware(outcomes) if spread is None else spread
    top = outcomes[outcomes["task"].isin(spread["task"].head(1))] if len(spread) else outcomes.iloc[:0]
    why = None if len(spread) else "no kernel was timed on two or more GPUs"
    rows.append(_row("largest cross-GPU speedup spread (max/min)", PAPER_CROSS_GPU_MAX,
                     float(spread["ratio"].max()) if len(spread) else None, "times",
                     source(top, f"task {spread['task'].iloc[0]}" if len(spread) else ""), why))  # fmt: skip
    rows.append(_quantization(outcomes))
    return rows


def _row(claim: str, paper, kbx, unit: str, src: dict, why: str | None = None) -> dict:
    if kbx is not None and isinstance(kbx, float) and not math.isfinite(kbx):
        kbx, why = None, why or "not defined for these runs"
    return {"claim": claim, "paper": paper, "kbx": kbx, "unit": unit, "why_missing": why if kbx is None else None,
            "source": src}  # fmt: skip


def _fusion(outcomes: pd.DataFrame) -> dict:
    fusion = outcomes[outcomes["category"].str.lower() == FUSION]
    if fusion.empty:
        return _row("Fusion tasks failing under every method", PAPER_FUSION_FAIL_ALL, None, "share",
                    source(fusion), "no Fusion task runs")  # fmt: skip
    solved = fusion.groupby("task")["correct"].max()
    return _row("Fusion tasks failing under every method", PAPER_FUSION_FAIL_ALL, float((solved == 0).mean()), "share",
                source(fusion, f"{len(solved)} Fusion tasks"))  # fmt: skip


def _iteration(frame: pd.DataFrame) -> list[dict]:
    """Compile rate and mean speedup, first round against last, and rescued vs persistent speedups.

    The compile rate comes two ways: best so far after the round (what the method would ship if
    stopped there; a task run with no attempt yet counts as failing) and the round's own attempts
    only. Each row's source names the task runs its figure was computed over.
    """
    method = iterating_method(frame)
    claims = [("compile rate, first round, best so far", PAPER_GEAK_COMPILE[0], "share"),
              ("compile rate, last round, best so far", PAPER_GEAK_COMPILE[1], "share"),
              ("compile rate, first round's own attempts", PAPER_GEAK_COMPILE[0], "share"),
              ("compile rate, last round's own attempts", PAPER_GEAK_COMPILE[1], "share"),
              ("mean speedup of correct kernels, first round", PAPER_GEAK_SPEEDUP[0], "times"),
              ("mean speedup of correct kernels, last round", PAPER_GEAK_SPEEDUP[1], "times"),
              ("mean speedup of kernels rescued by a later round", PAPER_RESCUED_SPEEDUP, "times"),
              ("mean speedup of kernels correct since the round before", PAPER_PERSISTENT_SPEEDUP, "times")]  # fmt: skip
    if method is None:
        return [_row(f"GEAK {c}", p, None, u, source(frame.iloc[:0]), "no method ran more than one round")
                for c, p, u in claims]  # fmt: skip
    runs = frame[frame["method"] == method]
    traj = tables.trajectory(runs, by=["method"])
    first, last = traj.iloc[0], traj.iloc[-1]
    r0, rn = int(first["round"]), int(last["round"])
    kinds = tables.transition_kinds(runs, by=["method"])
    trans = tables.transitions(runs, by=["method"])
    rescued = _pooled_mean(trans, "rescued")
    persistent = _pooled_mean(trans, "persistent")
    pooled = f"method {method}, pooled over hardware"
    at = {r: runs[runs["round"] == r] for r in (r0, rn)}
    tried = {r: rows[rows["attempts"] > 0] for r, rows in at.items()}
    saved = kinds[kinds["kind"] == "rescued"]
    per_step = ", ".join(f"{k - 1}->{k}: {int((saved['round'] == k).sum())}" for k in sorted(kinds["round"].unique()))
    kept = kinds[kinds["kind"] == "persistent"]
    sources = [
        source(at[r0], f"{pooled}; best so far after round {r0}, over every task run ({len(tried[r0])} of "
                       f"{len(at[r0])} tried round {r0}; the others count as failing)"),
        source(at[rn], f"{pooled}; best so far after round {rn} (rounds {r0}-{rn}), over every task run"),
        source(tried[r0], f"{pooled}; round {r0}'s own attempts, over the task runs that tried it"),
        source(tried[rn], f"{pooled}; round {rn}'s own attempts, over the task runs that tried it"),
        source(at[r0], f"{pooled}; correct kernels, best so far after round {r0}"),
        source(at[rn], f"{pooled}; correct kernels, best so far after round {rn}"),
        source(runs[runs["run_id"].isin(saved["run_id"])],
               f"{pooled}; {len(saved)} kernels first correct at a later round ({per_step}), "
               f"{int((~saved['tried_before']).sum())} of them with no attempt before"),
        source(runs[runs["run_id"].isin(kept["run_id"])],
               f"{pooled}; {len(kept)} (kernel, round) pairs correct since the round before"),
    ]  # fmt: skip
    values = [first["compile_rate"], last["compile_rate"], first["round_compile_rate"], last["round_compile_rate"],
              first["mean_speedup"], last["mean_speedup"], rescued, persistent]  # fmt: skip
    no_time = f"no timed kernels ({tables.untimed_reason(runs)})"
    whys = [None, None, f"no attempt in round {r0}", f"no attempt in round {rn}", *[no_time] * 4]
    return [_row(f"GEAK {c} ({method})", p, None if v is None or pd.isna(v) else float(v), u, src, why)
            for (c, p, u), v, src, why in zip(claims, values, sources, whys, strict=True)]  # fmt: skip


def _pooled_mean(trans: pd.DataFrame, kind: str) -> float | None:
    n = trans[f"{kind}_timed"].to_numpy(float)
    means = trans[f"{kind}_mean_speedup"].to_numpy(float)
    ok = n > 0
    return float(np.sum(means[ok] * n[ok]) / n[ok].sum()) if ok.any() else None


def _quantization(outcomes: pd.DataFrame) -> dict:
    q = outcomes[outcomes["category"].str.lower() == tables.QUANTIZATION]
    paper = f"{PAPER_QUANTIZATION[0]}/{PAPER_QUANTIZATION[1]}"
    if q.empty:
        return _row("quantization tasks correct", paper, None, "count", source(q), "no Quantization task runs")
    return _row("quantization tasks correct", paper, f"{int(q['correct'].sum())}/{len(q)}", "count",
                source(q, "Quantization task runs"))  # fmt: skip


def fmt(value, unit: str) -> str:
    """A headline value for the report: shares as percentages, speedups with an x."""
    if value is None:
        return "–"
    if unit == "share":
        return f"{value:.1%}"
    if unit == "times":
        return f"{value:.2f}x"
    return str(value)


def markdown(rows: list[dict]) -> str:
    lines = ["| claim | paper | kbx | from runs |", "|---|---|---|---|"]
    for r in rows:
        src = r["source"]
        jobs = ", ".join(j[:8] for j in src["jobs"][:SHOWN_JOB_IDS])
        more = f" +{len(src['jobs']) - SHOWN_JOB_IDS} more" if len(src["jobs"]) > SHOWN_JOB_IDS else ""
        where = "none"
        if src["task_runs"]:
            where = (f"{src['task_runs']} task runs ({src['subset']}); methods {', '.join(src['methods'])}; "
                     f"hardware {', '.join(src['hardware'])}; jobs {jobs}{more}")  # fmt: skip
        kbx = fmt(r["kbx"], r["unit"]) + (f" ({r['why_missing']})" if r["why_missing"] else "")
        lines.append(f"| {r['claim']} | {fmt(r['paper'], r['unit'])} | {kbx} | {where} |")
    return "\n".join(lines)
