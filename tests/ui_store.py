"""A kbx store for the UI tests: job runs logged by kbx.tracking.tracker, their many task runs in bulk.

What the jobs table shows (the experiments, their tags and views, the job runs with their
descriptions and headline metrics) is written by the same `Tracker` calls a job makes. The task
runs, 184 a job as in the suite, follow the same contract but go in through MLflow's SQL models in
one transaction (analysis.bench): logging them one by one would take minutes of CI.
"""

from __future__ import annotations

import math

from analysis import bench
from kbx.job.summary import FAST_P
from kbx.tracking.tracker import Tracker


def log_job(tracker: Tracker, method: str, tasks: list, hardware: str, seed: int) -> tuple[str, dict[str, float]]:
    """A finished job of one round over `tasks` (TaskInfo); returns its run id and its summary."""
    name = f"{method} | all | {hardware} | 1 round"
    params = {"method": method, "category": "all", "hardware": hardware, "iteration": 1, "n_tasks": len(tasks),
              "config_hash": f"ui{seed}"}  # fmt: skip
    parent = tracker.start_parent(name, params, {"kbx.method": method})
    runs = bench.task_runs(parent, method, hardware, [(t.id, t.category) for t in tasks], seed)
    bench.insert(tracker.uri, tracker.tasks_experiment_id, runs)
    summary = summarize([shipped(r) for r in runs])
    tracker.finish_parent(parent, summary, {})
    return parent, summary


def shipped(run: bench.FakeRun) -> dict[str, float]:
    """What a task run says the method ships after its last round: the plain-named metrics there."""
    last = max(step for _, _, step in run.metrics)
    return {k: v for k, v, step in run.metrics if step == last and k in ("compiled", "correct", "speedup")}


def summarize(outcomes: list[dict[str, float]]) -> dict[str, float]:
    """kbx.job.summary's figures from per-task outcomes."""
    n = len(outcomes)
    speedups = [o["speedup"] for o in outcomes if o.get("correct") and "speedup" in o]
    return {"n_tasks": float(n), "compile_rate": sum(o.get("compiled", 0.0) for o in outcomes) / n,
            "correct_rate": sum(o.get("correct", 0.0) for o in outcomes) / n,
            "fast_1": sum(s > FAST_P for s in speedups) / n,
            "geomean_speedup": math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else math.nan}  # fmt: skip
