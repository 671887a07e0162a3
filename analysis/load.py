"""MLflow -> one tidy pandas frame: a row per method x task x round x hardware x seed.

kbx logs one run per job (tag kbx.role=job) in the named experiment and one run per task
(kbx.role=task, its job's id in the tag mlflow.parentRunId) in the companion `<experiment>-tasks`;
a task run's metrics carry the round as their step (see kbx/tracking/tracker.py): `correct`, `compiled`,
`speedup`, ... are what the method ships by that round (best so far), `round_correct`, ... the
round's own attempt. The frame keeps those names. `search_runs` returns only the latest value of
each metric, so per-round values come from the metric histories.

Two paths give the same frame (the tests check it). The portable one uses
`MlflowClient.search_runs` and `get_metric_history`, and works against any tracking server. When
the store is kbx's sqlite (or another SQL) store, the runs, parameters, tags and histories are
read with a handful of plain queries through MLflow's own table models instead: over 10,000 runs
the portable path spends ~11 s building ORM run objects and makes 110,000 history calls.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pandas as pd

from kbx.tracking.tracker import FAST_P
from kbx.tracking.ui_links import PARENT_TAG, tasks_experiment

ROLE_TAG = "kbx.role"
STATUS_TAG = "kbx.status"
CACHE_REPLAY_TAG = "kbx.cache_replay"  # a job run's: "true" when every LLM answer came from the cache
UNJUDGED = ("harness_error", "quarantined", "llm_error")  # kbx.core.record.Status values that are no verdict
DEFAULT_STORE = Path("mlruns") / "mlflow.db"  # kbx's default, relative to the working directory
PAGE_SIZE = 50_000  # MLflow's SEARCH_MAX_RESULTS_THRESHOLD: the largest page search_runs serves
# A round's attempts as samples (kbx.tracking.tracker._sample_metrics; absent in runs of an older kbx): pass@k, fast_p@k
SAMPLE_KEYS = ("judged_attempts", "correct_attempts", *(f"fast_{p:g}_attempts" for p in FAST_P))
ROUND_KEYS = ("round_compiled", "round_correct", "round_speedup", "round_runtime_ms", "round_baseline_ms", "attempts",
              *SAMPLE_KEYS)  # fmt: skip
BEST_KEYS = ("compiled", "correct", "speedup", "runtime_ms", "baseline_ms")  # what the method ships by the round
METRIC_KEYS = ROUND_KEYS + BEST_KEYS
TASK_PARAMS = ("task", "category", "task_version", "method", "hardware")
JOB_PARAMS = ("gpu_name", "device", "iteration", "suite_version", "kbx_version", "config_hash", "torch_version",
              "public_seeds", "secret_seed", "llm_model", "llm_settings")  # fmt: skip
UNKNOWN = "unknown"  # a parameter an older run did not log
COLUMNS = (
    "experiment", "job_run_id", "run_id", "method", "task", "category", "task_version", "hardware", "gpu_name",
    "device", "seed", "round", "final", "status", *METRIC_KEYS, "timed", "suite_version", "kbx_version",
    "config_hash", "torch_version", "iteration", "model", "llm_settings", "cache_replay",
)  # fmt: skip
# What tells jobs of one method name apart: the LLM (kbx.job.llm_job: llm_model) and the hash of the settings
# that decide its answers (llm_settings). Where one method name covers several, `method` names them too.
VARIANT_KEYS = ("model", "llm_settings")
SETTINGS_LABEL_CHARS = 6


class AnalysisError(Exception):
    """A problem with the inputs the user can fix (unknown experiment, empty selection)."""


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which runs a report covers, kept so that every figure can say where it came from."""

    tracking_uri: str
    experiment: str
    experiment_id: str
    filter: str
    job_run_ids: tuple[str, ...]
    n_task_runs: int
    n_replays_left_out: int = 0  # task runs of cache-replay jobs whose answers another run in the selection judged


def default_tracking_uri() -> str:
    """kbx's rule: $MLFLOW_TRACKING_URI, else the sqlite store under ./mlruns."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{DEFAULT_STORE.resolve()}"


def load(tracking_uri: str, experiment: str, filter_string: str = "", bulk: bool = True) -> tuple[pd.DataFrame, Selection]:
    """The tidy frame for the task runs of `experiment` selected by `filter_string`.

    The filter is an MLflow filter string. It selects a task run when the run itself matches or
    when its parent job does (so `params.iteration = '3'`, a job parameter, works too).
    `bulk=False` forces the portable `get_metric_history` path (the tests compare both).
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise AnalysisError(f"no MLflow experiment named {experiment!r} in {tracking_uri}")
    companion = client.get_experiment_by_name(tasks_experiment(experiment))
    ids = [found.experiment_id] + ([companion.experiment_id] if companion is not None else [])
    store = _sql_store(client) if bulk else None
    runs = _search_sql(store, ids) if store else _search(client, ids, "")
    tasks = runs[runs["role"] == "task"]
    jobs = runs[runs["role"] == "job"]
    if (tasks["experiment_id"] == found.experiment_id).any():
        raise AnalysisError(f"experiment {experiment!r} holds task runs beside its jobs: an older kbx logged it, "
                            "whose `correct`, `compiled` and `speedup` were the round's own attempt; rerun its jobs")
    if filter_string:
        matched = set(_search(client, ids, filter_string)["run_id"])
        tasks = tasks[tasks["run_id"].isin(matched) | tasks["parent"].isin(matched)]
    jobs = jobs[jobs["run_id"].isin(set(tasks["parent"]))]
    run_ids = list(tasks["run_id"])
    history = _histories_sql(store, ids, run_ids) if store else _histories(client, run_ids)
    frame, replays = drop_replays(_tidy(tasks, jobs, history, experiment))
    selection = Selection(tracking_uri, experiment, found.experiment_id, filter_string,
                          tuple(sorted(jobs["run_id"])), int(len(tasks)), replays)  # fmt: skip
    return frame, selection


def _search(client, experiment_ids: list[str], filter_string: str) -> pd.DataFrame:
    """Every run's id, role, parent, params and tags, page by page, as a flat frame."""
    rows, token = [], None
    while True:
        page = client.search_runs(experiment_ids, filter_string=filter_string, max_results=PAGE_SIZE, page_token=token)
        for run in page:
            tags, params = run.data.tags, run.data.params
            row = {"run_id": run.info.run_id, "experiment_id": str(run.info.experiment_id), "role": tags.get(ROLE_TAG, ""),
                   "parent": tags.get(PARENT_TAG, ""), "status": tags.get(STATUS_TAG, ""),
                   "cache_replay": tags.get(CACHE_REPLAY_TAG, "")}  # fmt: skip
            row.update({f"p.{k}": params[k] for k in TASK_PARAMS + JOB_PARAMS if k in params})
            rows.append(row)
        token = page.token
        if not token:
            break
    frame = pd.DataFrame(rows, columns=None if rows else ["run_id", "experiment_id", "role", "parent", "status",
                                                          "cache_replay"])  # fmt: skip
    return frame


def _sql_store(client):
    """MLflow's SQL store behind `client`, or None (a server, a file store).

    Reaching it goes through a private attribute; mlflow is pinned (<3.18) and the tests check
    that this path and the public API give identical frames.
    """
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    return store if hasattr(store, "ManagedSessionMaker") else None


def _search_sql(store, experiment_ids: list[str]) -> pd.DataFrame:
    """What `_search` returns, read with three plain queries instead of ~20 ORM objects a run.

    Rows come back as the driver's plain tuples (no SQLAlchemy Row per value), and each run keeps
    the one value MLflow allows per tag or param key, so a pivot needs no aggregation.
    """
    from mlflow.store.tracking.dbmodels.models import SqlParam, SqlRun, SqlTag
    from sqlalchemy import select

    in_experiments = SqlRun.experiment_id.in_([int(i) for i in experiment_ids])
    active = select(SqlRun.run_uuid, SqlRun.experiment_id).where(in_experiments, SqlRun.lifecycle_stage == "active")
    tags = select(SqlTag.run_uuid, SqlTag.key, SqlTag.value).join(SqlRun, SqlRun.run_uuid == SqlTag.run_uuid)
    tags = tags.where(in_experiments, SqlTag.key.in_((ROLE_TAG, PARENT_TAG, STATUS_TAG, CACHE_REPLAY_TAG)))
    params = select(SqlParam.run_uuid, SqlParam.key, SqlParam.value).join(SqlRun, SqlRun.run_uuid == SqlParam.run_uuid)
    params = params.where(in_experiments, SqlParam.key.in_(TASK_PARAMS + JOB_PARAMS))
    with store.ManagedSessionMaker() as session:
        fetch = session.connection().execute
        ids, tag_rows, param_rows = (fetch(q).cursor.fetchall() for q in (active, tags, params))
    frame = pd.DataFrame.from_records(ids, columns=["run_id", "experiment_id"]).astype({"experiment_id": str})
    names = {ROLE_TAG: "role", PARENT_TAG: "parent", STATUS_TAG: "status", CACHE_REPLAY_TAG: "cache_replay"}
    for rows, rename in ((tag_rows, names), (param_rows, None)):
        long = pd.DataFrame.from_records(rows, columns=["run_id", "key", "value"])
        wide = long.pivot(index="run_id", columns="key", values="value")
        wide = wide.rename(columns=rename or (lambda k: f"p.{k}"))
        frame = frame.merge(wide.reset_index(), on="run_id", how="left")
    for column in names.values():
        frame[column] = frame[column].fillna("") if column in frame else ""
    return frame


def _histories(client, run_ids: list[str]) -> pd.DataFrame:
    """Long frame (run_id, key, step, value) of every per-round metric of these runs."""
    rows = [(rid, key, m.step, m.value, m.timestamp) for rid in run_ids for key in METRIC_KEYS
            for m in client.get_metric_history(rid, key)]  # fmt: skip
    return _dedupe(pd.DataFrame(rows, columns=["run_id", "key", "step", "value", "timestamp"]))


def _histories_sql(store, experiment_ids: list[str], run_ids: list[str]) -> pd.DataFrame:
    """The same rows as get_metric_history, in one query joined on the experiment.

    One scan of the experiment's metrics beats 10,000 indexed lookups (0.7 s against 3.5 s for
    10,000 runs on sqlite); runs outside the selection are dropped afterwards. Metrics are
    non-null floats and ints, so the driver's raw values need none of SQLAlchemy's conversions.
    """
    from mlflow.store.tracking.dbmodels.models import SqlMetric, SqlRun
    from sqlalchemy import select

    query = select(SqlMetric.run_uuid, SqlMetric.key, SqlMetric.step, SqlMetric.value, SqlMetric.timestamp,
                   SqlMetric.is_nan).join(SqlRun, SqlRun.run_uuid == SqlMetric.run_uuid)  # fmt: skip
    query = query.where(SqlRun.experiment_id.in_([int(i) for i in experiment_ids]), SqlMetric.key.in_(METRIC_KEYS))
    with store.ManagedSessionMaker() as session:
        rows = session.connection().execute(query).cursor.fetchall()  # the driver's plain tuples: no Row object per value
    history = pd.DataFrame.from_records(rows, columns=["run_id", "key", "step", "value", "timestamp", "is_nan"])
    history.loc[history["is_nan"].astype(bool), "value"] = np.nan
    history = history[history["run_id"].isin(pd.Index(run_ids))].drop(columns="is_nan")
    return _dedupe(history)


def _dedupe(history: pd.DataFrame) -> pd.DataFrame:
    """A value logged twice at one step keeps the later one, as MLflow's latest-metric rule does."""
    history = history.sort_values(["run_id", "key", "step", "timestamp"], kind="stable")
    return history.drop_duplicates(["run_id", "key", "step"], keep="last").drop(columns="timestamp")


def _tidy(tasks: pd.DataFrame, jobs: pd.DataFrame, history: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Join per-round metrics with task and job parameters; fill rounds a task skipped."""
    if tasks.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    wide = history.set_index(["run_id", "step", "key"])["value"].unstack("key")  # (run, step) pairs as logged
    wide = wide.reindex(columns=list(METRIC_KEYS)).reset_index().rename(columns={"step": "round"})
    meta = tasks.rename(columns={"parent": "job_run_id"})
    meta = meta[["run_id", "job_run_id", "status", *[f"p.{k}" for k in TASK_PARAMS if f"p.{k}" in meta]]]
    job_meta = jobs.rename(columns={"run_id": "job_run_id"})
    job_meta = job_meta[["job_run_id", "cache_replay", *[f"p.{k}" for k in JOB_PARAMS if f"p.{k}" in job_meta]]]
    frame = meta.merge(job_meta, on="job_run_id", how="left")
    frame.columns = [c.removeprefix("p.") for c in frame.columns]
    for key in TASK_PARAMS + JOB_PARAMS:
        frame[key] = frame[key].fillna(UNKNOWN) if key in frame else UNKNOWN
    frame = _fill_rounds(frame, wide)
    frame["experiment"] = experiment
    frame["model"], frame["cache_replay"] = frame["llm_model"], frame["cache_replay"].eq("true")
    frame["method"] = variant_labels(frame)
    frame["seed"] = frame["public_seeds"].astype(str) + "+" + frame["secret_seed"].astype(str)
    frame["timed"] = frame["round_speedup"].notna()  # the round's own attempt was timed
    last = frame.groupby("run_id")["round"].transform("max")
    frame["final"] = frame["round"] == last
    frame = frame[list(COLUMNS)].sort_values(["method", "hardware", "task", "seed", "run_id", "round"], kind="stable")
    return frame.reset_index(drop=True)


def variant_labels(frame: pd.DataFrame) -> pd.Series:
    """The method column the reports group by: the method's name, with its model where one name covers
    several models, and its settings hash where one name and model cover several settings, e.g.
    "oneshot (openai/gpt-4o-mini, 3f2a1c)". Jobs that differ in what decides the answers never pool."""
    method, model = frame["method"].astype(str), frame["model"].astype(str)
    settings = frame["llm_settings"].astype(str).str[:SETTINGS_LABEL_CHARS]
    many_models = frame.groupby("method", observed=True)["model"].transform("nunique") > 1
    many_settings = frame.groupby(["method", "model"], observed=True)["llm_settings"].transform("nunique") > 1
    extra = pd.Series("", index=frame.index).mask(many_models, model)
    extra = extra.mask(many_settings, extra.where(extra == "", extra + ", ") + settings)
    return method.where(extra == "", method + " (" + extra + ")")


def drop_replays(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The frame less the task runs of cache-replay jobs whose answers a job that asked the LLM also
    judged here (same method, model, settings, task and hardware): the same answers, counted once.
    A replay with no such job stays, marked by its `cache_replay` column. Returns (frame, task runs left out)."""
    if frame.empty or not frame["cache_replay"].any():
        return frame, 0
    key = ["method", *VARIANT_KEYS, "task", "hardware"]
    asked = frame.loc[~frame["cache_replay"], key].drop_duplicates()
    hit = frame[key].merge(asked.assign(_asked=True), on=key, how="left")["_asked"].fillna(False).to_numpy(bool)
    out = frame["cache_replay"].to_numpy(bool) & hit
    return frame[~out].reset_index(drop=True), int(frame.loc[out, "run_id"].nunique())


def _fill_rounds(meta: pd.DataFrame, wide: pd.DataFrame) -> pd.DataFrame:
    """Every task of a job gets a row for every round its job reached.

    kbx logs a step only for rounds in which a task had an attempt (an iterative method stops
    once a task is solved). The best-so-far metrics carry forward into the skipped rounds, and the
    round's own metrics stay empty with attempts = 0, so trajectories compare like with like.
    """
    steps = wide.merge(meta[["run_id", "job_run_id"]], on="run_id", how="right")
    steps["round"] = steps["round"].fillna(0).astype(int)
    top = steps.groupby("job_run_id")["round"].max()
    grid = meta[["run_id", "job_run_id"]].copy()
    grid["round"] = grid["job_run_id"].map(top).fillna(0).astype(int).map(lambda n: list(range(n + 1)))
    grid = grid.explode("round").astype({"round": int})
    full = grid.merge(wide, on=["run_id", "round"], how="left", indicator=True)
    full = full.sort_values(["run_id", "round"], kind="stable")
    skipped = full.pop("_merge") == "left_only"
    carried = full.groupby("run_id")[list(BEST_KEYS)].ffill()
    full.loc[skipped, list(BEST_KEYS)] = carried.loc[skipped]
    for key in ("compiled", "correct"):  # before its first attempt a task has nothing that works
        full.loc[skipped, key] = full.loc[skipped, key].fillna(0.0)
    full["attempts"] = full["attempts"].fillna(0.0)
    return meta.drop(columns="job_run_id").merge(full, on="run_id", how="right")


def outcomes(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per task run: what the method shipped by its last round (best-so-far metrics).

    This is the unit of the deviance model and of every per-task table; `correct`, `compiled`
    and `speedup` are the best attempt's, as in MLflow, not the last round's own. Task runs without
    a verdict on the kernel (`harness_error`: kbx's own machinery failed; `quarantined`) are left
    out, as they are of the job's rates.
    """
    final = frame[frame["final"] & ~frame["status"].isin(UNJUDGED)]
    keep = ["experiment", "job_run_id", "run_id", "method", "task", "category", "hardware", "gpu_name", "seed", "round",
            "status"]
    out = final[keep].copy()
    out["compiled"] = final["compiled"].fillna(0.0).to_numpy()
    out["correct"] = final["correct"].fillna(0.0).to_numpy()
    out["speedup"] = final["speedup"].to_numpy()
    return out.reset_index(drop=True)
