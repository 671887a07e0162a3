"""Bring runs home: copy the runs of one MLflow store into another, once.

    python -m kbx.sync SRC [DST] [--experiment NAME ...]

A GPU node without network logs to its local store (`mlruns/`: a sqlite database, artifacts beside
it); carried home, SRC is that directory (or its `mlflow.db`, or any tracking URI), and DST the main
store (default `$MLFLOW_TRACKING_URI`). Every finished run of each experiment is recreated in the
experiment of the same name in DST with its name, start and end times, status, tags, params, every
metric's full history (value, timestamp, step), its artifacts and its traces (an LLM task's
trajectory, kbx.tracking.traces: spans and assessments, under a new trace id linked to the copy);
`mlflow.parentRunId` is pointed at the parent's copy, so job/task nesting survives whatever the layout.

Idempotent: each copy is tagged `kbx.source_run` with the id of the run it came from (or of the run
that one came from), and a run whose copy is already in DST is skipped, so importing the same store
again, or a store that grew, adds only what is new. A copy is tagged `kbx.source_run` only as its
last write; one cut short (tagged `kbx.import_pending` alone) is deleted and redone by the next import.
A run that has not ended (RUNNING) is left for a later import, with the runs nested under it, since
its copy would never be updated. A copy's traces are written before its source tag, and deleted with
a cut-short copy. Not copied: datasets (run inputs) and logged models, which kbx does not write.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from kbx.tracking import traces
from kbx.tracking.tracker import DB_FILE, METRICS_PER_BATCH, Retrying, experiment_artifact_location
from kbx.tracking.ui_links import PARENT_TAG, tasks_experiment

log = logging.getLogger("kbx")

SOURCE_TAG = "kbx.source_run"
PENDING_TAG = "kbx.import_pending"
ENDED = ("FINISHED", "FAILED", "KILLED")
PAGE_SIZE = 1000  # runs per search page
PARAMS_PER_BATCH = 100  # MLflow's limit per log_batch call (tags too)


class SyncError(Exception):
    """Bad input or a store that cannot be read: one line for the user."""


@dataclass
class Counts:
    imported: int = 0
    already: int = 0
    unfinished: list[str] = field(default_factory=list)  # run ids left for a later import
    redone: int = 0  # copies an earlier import left unfinished: deleted, and their runs copied again


def store_uri(place: str, must_exist: bool = True) -> str:
    """A tracking URI for `place`: URIs pass through; a directory means its mlflow.db (kbx's layout)."""
    if "://" in place:
        return place
    path = Path(place)
    if path.is_dir():
        path = path / DB_FILE
    if must_exist and not path.is_file():
        raise SyncError(f"no MLflow store at {place} (expected a mlruns/ directory with {DB_FILE}, or a URI)")
    return f"sqlite:///{path.resolve()}"


def sync(src_uri: str, dst_uri: str, experiments: list[str] | None = None,
         allow_missing_artifacts: bool = False) -> dict[str, Counts]:
    """Copy every ended run of `experiments` (default: all with runs) from `src_uri` into `dst_uri`.
    A run whose artifact folder is not found stops the import (nothing half-copied is left marked
    done) unless `allow_missing_artifacts`, which copies it without artifacts and warns."""
    from mlflow.tracing.client import TracingClient
    from mlflow.tracking import MlflowClient

    if src_uri == dst_uri:
        raise SyncError(f"source and destination are the same store: {src_uri}")
    src = MlflowClient(tracking_uri=src_uri)
    dst = Retrying(MlflowClient(tracking_uri=dst_uri))  # a tracking server restarting is waited out
    dst_traces = Retrying(TracingClient(dst_uri))
    found = {e.name: e for e in src.search_experiments()}
    missing = [name for name in experiments or [] if name not in found]
    if missing:
        raise SyncError(f"no experiment {', '.join(missing)} in {src_uri} (have: {', '.join(sorted(found))})")
    names = with_task_experiments(experiments or sorted(found), found)
    runs = {name: all_runs(src, found[name].experiment_id) for name in names}
    by_id = {r.info.run_id: r for rs in runs.values() for r in rs}  # a job's task runs sit in its companion
    copies = {r.data.tags[SOURCE_TAG]: r.info.run_id for e in dst.search_experiments()
              for r in all_runs(dst, e.experiment_id, f"tags.`{SOURCE_TAG}` LIKE '%'")}  # fmt: skip
    results = {}
    for name in names:
        if runs[name] or experiments:
            dst_experiment = destination_experiment(dst, dst_uri, found[name])
            results[name] = sync_experiment(src, src_uri, runs[name], dst, dst_experiment, allow_missing_artifacts,
                                            by_id, copies, dst_traces)  # fmt: skip
    relink_jobs(dst_uri, names, found, runs, copies)
    return results


def with_task_experiments(names: list[str], found: dict) -> list[str]:
    """`names` with each one's companion of task runs (kbx.tracking.ui_links) right after it, where SRC has one."""
    out = []
    for name in names:
        companion = tasks_experiment(name)
        out += [n for n in (name, companion) if n not in out and (n == name or n in found)]
    return out


def relink_jobs(dst_uri: str, names: list[str], found: dict, runs: dict, copies: dict) -> None:
    """The copied jobs' descriptions and task views name their copies (SRC's ids mean nothing in DST)."""
    from kbx.tracking.tracker import Tracker

    for name in names:
        if tasks_experiment(name) not in found:
            continue
        tracker = Tracker(dst_uri, name, Path.cwd())
        for run in runs[name]:
            copy = copies.get(source_id(run))
            if copy and run.data.tags.get("kbx.role") == "job":
                tracker.link_job(copy, int(run.data.params.get("n_tasks", 0)))


def all_runs(client, experiment_id: str, filter_string: str = "") -> list:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], filter_string, max_results=PAGE_SIZE, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def destination_experiment(dst, dst_uri: str, experiment) -> str:
    """The id of the experiment of the same name in DST, created (with the source's tags) if new."""
    existing = dst.get_experiment_by_name(experiment.name)
    if existing is not None:
        return existing.experiment_id
    tags = {k: v for k, v in experiment.tags.items() if not k.startswith("mlflow.")}
    location = experiment_artifact_location(dst_uri, experiment.name)
    return dst.create_experiment(experiment.name, artifact_location=location, tags=tags)


def sync_experiment(src, src_uri: str, runs: list, dst, dst_experiment: str, allow_missing_artifacts: bool,
                    by_id: dict | None = None, copies: dict | None = None, dst_traces=None) -> Counts:
    """`by_id`: every source run that may be a parent (all experiments synced); `copies`: source id ->
    its copy in DST, over every experiment, updated as runs are copied; `dst_traces`: an mlflow
    TracingClient of DST, to copy the runs' traces with them (None: no traces)."""
    counts = Counts()
    if copies is None:
        done = all_runs(dst, dst_experiment, f"tags.`{SOURCE_TAG}` LIKE '%'")
        copies = {r.data.tags[SOURCE_TAG]: r.info.run_id for r in done}  # source id -> its copy in DST
    for leftover in all_runs(dst, dst_experiment, f"tags.`{PENDING_TAG}` LIKE '%'"):
        if SOURCE_TAG not in leftover.data.tags:
            if dst_traces is not None:
                traces.delete_run_traces(dst_traces, dst_experiment, leftover.info.run_id)
            dst.delete_run(leftover.info.run_id)
            counts.redone += 1
    by_id = by_id if by_id is not None else {r.info.run_id: r for r in runs}
    for run in parents_first(runs):
        source = source_id(run)
        if source in copies:
            counts.already += 1
            continue
        if not ended_with_ancestors(run, by_id):
            counts.unfinished.append(run.info.run_id)
            continue
        parent = run.data.tags.get(PARENT_TAG)
        dst_parent = copies.get(source_id(by_id[parent])) if parent in by_id else None
        copies[source] = copy_run(src, src_uri, run, dst, dst_experiment, dst_parent, allow_missing_artifacts,
                                  dst_traces)  # fmt: skip
        counts.imported += 1
    return counts


def source_id(run) -> str:
    """The id of the run this one stands for: its own, or, for a copy, that of its original."""
    return run.data.tags.get(SOURCE_TAG, run.info.run_id)


def parents_first(runs: list) -> list:
    """Runs ordered so that every run comes after its parent (then by start time)."""
    by_id = {r.info.run_id: r for r in runs}

    def depth(run) -> int:
        seen, parent = 0, run.data.tags.get(PARENT_TAG)
        while parent in by_id and seen < len(by_id):
            seen, parent = seen + 1, by_id[parent].data.tags.get(PARENT_TAG)
        return seen

    return sorted(runs, key=lambda r: (depth(r), r.info.start_time or 0))


def ended_with_ancestors(run, by_id: dict) -> bool:
    seen = set()
    while run is not None and run.info.run_id not in seen:
        if run.info.status not in ENDED:
            return False
        seen.add(run.info.run_id)
        run = by_id.get(run.data.tags.get(PARENT_TAG))
    return True


def copy_run(src, src_uri: str, run, dst, dst_experiment: str, dst_parent: str | None,
             allow_missing_artifacts: bool = False, dst_traces=None) -> str:
    """Recreate `run` in DST; returns the copy's id. Its SOURCE_TAG is the last write (see module doc)."""
    from mlflow.entities import Metric, Param, RunTag

    start_tags = {PENDING_TAG: source_id(run), **({PARENT_TAG: dst_parent} if dst_parent else {})}
    copy = dst.create_run(dst_experiment, start_time=run.info.start_time, tags=start_tags,
                          run_name=run.info.run_name)  # fmt: skip
    copy_id = copy.info.run_id
    skip = {SOURCE_TAG, PENDING_TAG, PARENT_TAG, "mlflow.runName"}
    tags = [RunTag(k, v) for k, v in run.data.tags.items() if k not in skip]
    params = [Param(k, v) for k, v in run.data.params.items()]
    for chunk in chunks(tags, PARAMS_PER_BATCH):
        dst.log_batch(copy_id, tags=chunk)
    for chunk in chunks(params, PARAMS_PER_BATCH):
        dst.log_batch(copy_id, params=chunk)
    history = [Metric(m.key, m.value, m.timestamp, m.step)
               for key in run.data.metrics for m in src.get_metric_history(run.info.run_id, key)]  # fmt: skip
    for chunk in chunks(history, METRICS_PER_BATCH):
        dst.log_batch(copy_id, metrics=chunk)
    with tempfile.TemporaryDirectory(prefix="kbx-sync-") as tmp:
        local = local_artifacts(run, src_uri, allow_missing_artifacts)
        local = local or Path(src.download_artifacts(run.info.run_id, "", tmp))
        if local.is_dir() and any(local.iterdir()):
            dst.log_artifacts(copy_id, str(local))
    if dst_traces is not None:
        copy_traces(src, run, dst_traces, dst_experiment, copy_id)
    dst.set_terminated(copy_id, run.info.status, end_time=run.info.end_time)
    dst.set_tag(copy_id, SOURCE_TAG, source_id(run))
    dst.delete_tag(copy_id, PENDING_TAG)
    return copy_id


def copy_traces(src, run, dst_traces, dst_experiment: str, copy_id: str) -> int:
    """Every trace linked to `run` in SRC, written to DST linked to its copy; returns how many."""
    found, token = [], None
    while True:
        page = src.search_traces(locations=[run.info.experiment_id], run_id=run.info.run_id, page_token=token)
        found += list(page)
        token = page.token
        if not token:
            break
    for trace in found:
        traces.write(dst_traces, *traces.copy_trace(trace, dst_experiment, copy_id))
    return len(found)


def chunks(items: list, size: int):
    return (items[i : i + size] for i in range(0, len(items), size))


def local_artifacts(run, src_uri: str, allow_missing: bool = False) -> Path | None:
    """The run's artifact folder when a sqlite store keeps them on this disk (it may not exist: a run
    that logged none has none), else None (download them). A store carried from another machine
    still names that machine's paths: the experiment's artifact root is found again under the store's
    directory, and is the one thing that must exist."""
    parsed = urlparse(run.info.artifact_uri or "")
    if not src_uri.startswith("sqlite:///") or parsed.scheme not in ("", "file"):
        return None
    path = Path(unquote(parsed.path))  # <experiment root>/<run id>/artifacts
    root = path.parent.parent
    found = root if root.is_dir() else relocated(root, Path(src_uri.removeprefix("sqlite:///")).parent)
    if found is None:
        where = f"the artifacts of run {run.info.run_id} are not at {root}, nor under the store's directory"
        if not allow_missing:
            raise SyncError(f"{where} (carry its artifacts/ folder with mlflow.db, or pass --allow-missing-artifacts)")
        log.warning("kbx.sync: %s: copied without artifacts", where)
        return path
    return found / path.parent.name / path.name


def relocated(path: Path, store_dir: Path) -> Path | None:
    """The longest tail of `path` that exists under `store_dir` (or its parent), or None."""
    parts = path.parts[1:]
    for start in range(len(parts)):
        for base in (store_dir, store_dir.parent):
            candidate = base.joinpath(*parts[start:])
            if candidate.is_dir():
                return candidate
    return None

