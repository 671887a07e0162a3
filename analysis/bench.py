"""A synthetic kbx store of many task runs, and the time the report takes over it.

The store follows kbx's tracking contract exactly (job runs in the experiment, task runs in its
companion `<experiment>-tasks` naming their job, one step per round, best-so-far metrics under the
plain names and each round's own attempt under `round_`). Logging 10,000 runs through MlflowClient costs ~40-60 ms a run on
sqlite (create_run + log_batch + set_terminated, each its own transaction), about ten minutes;
so by default the rows go in through MLflow's own SQLAlchemy models in one transaction, and
`via_client=True` takes the slow, API-only path (the tests check both give the same frame).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import uuid
from pathlib import Path

import numpy as np

from kbx.tracking.ui_links import PARENT_TAG, tasks_experiment

METHODS = ("oneshot", "refine", "geak", "kernelagent", "stark")
HARDWARE = ("h100", "h200", "a100", "rtx4090")
CATEGORIES = ("Activation", "Broadcast", "Convolution", "Fusion", "Index", "LinearAlgebra", "Loss", "Math",
              "MatrixMultiply", "Normalization", "Optimizer", "Pooling", "Quantization", "Random", "Reduce")  # fmt: skip
ROUNDS = 3
BENCH_SEED = 0
CATEGORY_LOGIT_SD = 1.0  # spread of per-category log-odds of correctness
METHOD_LOGIT_SD = 0.5  # spread of per-method log-odds
COMPILE_LOGIT_BONUS = 1.5  # compiling is easier than being correct
ROUND_LOGIT_GAIN = 0.4  # each round of refinement raises the log-odds this much
SPEEDUP_LOG_SD = 0.6  # spread of log speedups of correct kernels
BASELINE_MS = 1.0
INSERT_CHUNK = 20_000  # rows per executemany


@dataclasses.dataclass
class FakeRun:
    """One run to log: params, tags and (key, value, step) metrics."""

    run_id: str
    name: str
    params: dict
    tags: dict
    metrics: list


def synthetic_runs(n_task_runs: int, seed: int = BENCH_SEED, methods=METHODS, hardware=HARDWARE) -> list[FakeRun]:
    """Jobs (method x hardware) over enough tasks to make `n_task_runs` child runs, parents first."""
    rng = np.random.default_rng(seed)
    jobs = [(m, h) for m in methods for h in hardware]
    n_tasks = max(1, math.ceil(n_task_runs / len(jobs)))
    tasks = [(CATEGORIES[i % len(CATEGORIES)], f"task{i:05d}") for i in range(n_tasks)]
    cat_logit = dict(zip(CATEGORIES, rng.normal(0, CATEGORY_LOGIT_SD, len(CATEGORIES)), strict=True))
    method_logit = dict(zip(methods, rng.normal(0, METHOD_LOGIT_SD, len(methods)), strict=True))
    runs, made = [], 0
    for method, hardware in jobs:
        parent = _job(method, hardware, rng)
        runs.append(parent)
        for category, stem in tasks:
            if made == n_task_runs:
                break
            logit = cat_logit[category] + method_logit[method]
            runs.append(_task(parent.run_id, method, hardware, f"{category}/{stem}", category, logit, rng))
            made += 1
    return runs


def task_runs(parent_id: str, method: str, hardware: str, tasks: list[tuple[str, str]], seed: int) -> list[FakeRun]:
    """The task runs of a job run already in the store (kbx.tracking.tracker's, say), one per (task id, category)."""
    rng = np.random.default_rng(seed)
    return [_task(parent_id, method, hardware, task, category, 0.0, rng) for task, category in tasks]


def insert(tracking_uri: str, experiment_id: str, runs: list[FakeRun]) -> None:
    """Add `runs` to an existing experiment in one transaction (see `fill`)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    _fill_sql(client._tracking_client.store, {run.run_id: experiment_id for run in runs}, runs)


def _job(method: str, hardware: str, rng) -> FakeRun:
    params = {"method": method, "category": "all", "hardware": hardware, "gpu_name": hardware.upper(),
              "device": "cuda", "iteration": ROUNDS, "config_hash": "bench", "kbx_version": "0.1.0",
              "suite_version": "bench", "torch_version": "bench", "public_seeds": "0",
              "secret_seed": int(rng.integers(1 << 31))}  # fmt: skip
    return FakeRun(uuid.uuid4().hex, f"{method}-all-{hardware}", params, {"kbx.role": "job", "kbx.method": method}, [])


def _task(parent: str, method: str, hardware: str, task: str, category: str, logit: float, rng) -> FakeRun:
    """Per-round metrics the way kbx.tracking.tracker logs them, with best-so-far carried along."""
    metrics, best = [], {"compiled": 0.0, "correct": 0.0, "speedup": math.nan}
    for k in range(ROUNDS):
        gain = k * ROUND_LOGIT_GAIN
        compiled = float(rng.random() < _sigmoid(logit + gain + COMPILE_LOGIT_BONUS))
        correct = float(compiled and rng.random() < _sigmoid(logit + gain))
        values = {"compiled": compiled, "correct": correct}
        if correct:
            speedup = float(math.exp(rng.normal(0, SPEEDUP_LOG_SD)))
            values.update(speedup=speedup, runtime_ms=BASELINE_MS / speedup, baseline_ms=BASELINE_MS)
        if (correct, values.get("speedup", 0.0)) > (best["correct"], _zero_nan(best["speedup"])):
            best = {"compiled": compiled, "correct": correct, "speedup": values.get("speedup", math.nan)}
        best["compiled"] = max(best["compiled"], compiled)
        metrics += [(f"round_{key}", v, k) for key, v in values.items()] + [("attempts", 1.0, k)]
        metrics += [(key, v, k) for key, v in best.items() if not math.isnan(v)]
    params = {"task": task, "category": category, "task_version": 1, "method": method, "hardware": hardware}
    tags = {PARENT_TAG: parent, "kbx.role": "task", "kbx.method": method,
            "kbx.status": "ok" if best["correct"] else "mismatch"}  # fmt: skip
    return FakeRun(uuid.uuid4().hex, task, params, tags, metrics)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _zero_nan(x: float) -> float:
    return 0.0 if math.isnan(x) else x


def fill(tracking_uri: str, experiment: str, runs: list[FakeRun], via_client: bool = False) -> str:
    """Create `experiment` and its tasks experiment, log `runs` into them; returns the jobs experiment's id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment(experiment)
    tasks_id = client.create_experiment(tasks_experiment(experiment))
    where = {run.run_id: tasks_id if run.tags.get("kbx.role") == "task" else experiment_id for run in runs}
    if via_client:
        _fill_client(client, where, runs)
    else:
        _fill_sql(client._tracking_client.store, where, runs)
    return experiment_id


def _fill_client(client, where: dict[str, str], runs: list[FakeRun]) -> None:
    """`where`: each run's experiment id, by the run's id in `runs`."""
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    for run in runs:
        run_id = client.create_run(where[run.run_id], run_name=run.name, tags=run.tags).info.run_id
        run.run_id, old = run_id, run.run_id
        for other in runs:  # children name their parent by id, which create_run has just chosen
            if other.tags.get(PARENT_TAG) == old:
                other.tags[PARENT_TAG] = run_id
        client.log_batch(run_id, params=[Param(k, str(v)) for k, v in run.params.items()],
                         metrics=[Metric(k, v, now, s) for k, v, s in run.metrics])  # fmt: skip
        client.set_terminated(run_id, "FINISHED")


def _fill_sql(store, where: dict[str, str], runs: list[FakeRun]) -> None:
    """Insert runs, params, tags, metrics and latest metrics as MLflow's SQL store lays them out."""
    from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlMetric, SqlParam, SqlRun, SqlTag

    now = int(time.time() * 1000)
    roots = {i: store.get_experiment(i).artifact_location for i in set(where.values())}
    tables = {SqlRun: [], SqlParam: [], SqlTag: [], SqlMetric: [], SqlLatestMetric: []}
    for run in runs:
        experiment_id, artifact_root = where[run.run_id], roots[where[run.run_id]]
        tables[SqlRun].append({"run_uuid": run.run_id, "name": run.name, "source_type": "LOCAL", "source_name": "",
                               "entry_point_name": "", "user_id": "bench", "status": "FINISHED", "start_time": now,
                               "end_time": now, "source_version": "", "lifecycle_stage": "active",
                               "artifact_uri": f"{artifact_root}/{run.run_id}/artifacts",
                               "experiment_id": int(experiment_id)})  # fmt: skip
        tables[SqlParam] += [{"key": k, "value": str(v), "run_uuid": run.run_id} for k, v in run.params.items()]
        tags = {**run.tags, "mlflow.runName": run.name, "mlflow.user": "bench"}
        tables[SqlTag] += [{"key": k, "value": str(v), "run_uuid": run.run_id} for k, v in tags.items()]
        latest = {}
        for key, value, step in run.metrics:
            row = {"key": key, "value": value, "timestamp": now, "step": step, "is_nan": False, "run_uuid": run.run_id}
            tables[SqlMetric].append(row)
            if key not in latest or step >= latest[key]["step"]:
                latest[key] = row
        tables[SqlLatestMetric] += list(latest.values())
    with store.engine.begin() as connection:
        for model, rows in tables.items():
            for i in range(0, len(rows), INSERT_CHUNK):
                connection.execute(model.__table__.insert(), rows[i : i + INSERT_CHUNK])


def run_bench(n_task_runs: int, workdir: Path, via_client: bool = False) -> dict:
    """Fill a fresh sqlite store under `workdir`, then time `report` over it, in this process and as the
    user runs it: a fresh `python -m analysis report` process, which also pays for importing MLflow,
    statsmodels and matplotlib (wall and CPU time; on a shared machine the CPU time is the steadier)."""
    from analysis.report import report

    workdir.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{(workdir / 'mlflow.db').resolve()}"
    runs = synthetic_runs(n_task_runs)
    start = time.perf_counter()
    fill(uri, "bench", runs, via_client=via_client)
    fill_s = time.perf_counter() - start
    start = time.perf_counter()
    report(uri, "bench", "", workdir / "report")
    report_s = time.perf_counter() - start
    cli_s, cli_cpu_s = _time_cli(uri, workdir / "report-cli")
    return {"task_runs": n_task_runs, "job_runs": len(runs) - n_task_runs, "fill_s": round(fill_s, 2),
            "fill": "client" if via_client else "sql", "report_s": round(report_s, 2),
            "report_cli_s": round(cli_s, 2), "report_cli_cpu_s": round(cli_cpu_s, 2)}  # fmt: skip


def _time_cli(uri: str, out: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of `python -m analysis report` as a child process."""
    import resource
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent  # this checkout's analysis package, whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "analysis", "report", "--experiment", "bench", "--tracking-uri", uri,
                    "--out", str(out)], check=True, capture_output=True, env=env)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
