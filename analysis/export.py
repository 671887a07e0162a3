"""MLflow stores -> one compact CSV of per-round task records, the input of `docs/FINDINGS.md`.

    python -m analysis export STORE [STORE ...] [--experiment NAME ...] [--label predictions=geak] --out CSV [--append]

The findings must be re-computable without a GPU, a tracking store or the network, so the runs
behind them are committed as data: one row per task run and round (what `analysis.load` reads out
of MLflow, less the columns only a tracking store needs). A STORE is a `mlruns/` directory (kbx's
layout: `mlflow.db` inside), a sqlite file or any tracking URI; the runs of an H100 node and of an
H200 node may come as two stores or already synced into one.

A run synced from one store into another (`kbx.sync`) is a copy with a new run id; when both the
copy and its original are exported, the first store's row is kept. Two rows are one record when
their job's configuration hash and seeds, the task and the round agree: the seeds hold the secret
seed drawn by each driver session, so two distinct jobs never share them.

`--append` adds the stores' records to those already in CSV (and its jobs file): a GPU node's store
exported once, then gone, still joins a second node's runs. A record already there is kept, so the
same store appended twice changes nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import load

log = logging.getLogger(__name__)

DEFAULT_EXPERIMENT = "kbx"  # kbx.run's default `experiment`
RECORD_COLUMNS = (
    "method", "hardware", "gpu_name", "category", "task", "task_version", "round", "final", "status",
    "compiled", "correct", "speedup", "runtime_ms", "baseline_ms",
    "round_compiled", "round_correct", "round_speedup", "round_runtime_ms", "round_baseline_ms", "attempts",
    *load.SAMPLE_KEYS, "run_id", "job_run_id",
)  # fmt: skip
JOB_COLUMNS = ("job_run_id", "experiment", "method", "hardware", "gpu_name", "device", "iteration", "seed",
               "config_hash", "kbx_version", "suite_version", "torch_version")  # fmt: skip
JOBS_FILE = "jobs.csv"  # beside the records: what every task run of a job shares, written once per job
IDENTITY = ("config_hash", "seed", "task", "round")  # one record, whichever store (or synced copy) it came from
SORT = ("hardware", "method", "category", "task", "seed", "round")
FLOAT_FORMAT = "%.6g"  # six significant digits: timings are medians of noisy measurements, far coarser than that


def export(stores: list[str], experiments: list[str], out: Path, labels: dict[str, str] | None = None,
           filter_string: str = "", append: bool = False) -> dict:  # fmt: skip
    """Write the records of every store's `experiments` to `out` and their jobs beside it (CSV); returns counts.
    With `append`, the records already in `out` come first and are kept."""
    records = collect(stores, experiments, labels or {}, filter_string)
    if append and out.exists():
        records = merge_records(read_records(out), records)
    jobs = records[list(JOB_COLUMNS)].drop_duplicates("job_run_id").sort_values(["hardware", "method", "job_run_id"])
    out.parent.mkdir(parents=True, exist_ok=True)
    for frame, path in ((jobs, out.with_name(JOBS_FILE)), (records[list(RECORD_COLUMNS)], out)):
        partial = path.with_name(path.name + ".partial")
        frame.to_csv(partial, index=False, float_format=FLOAT_FORMAT)
        partial.replace(path)  # never a half-written CSV in place of a good one
    return {"out": str(out), "jobs_file": str(out.with_name(JOBS_FILE)), "rows": len(records),
            "task_runs": int(records["run_id"].nunique()), "jobs": len(jobs),
            "methods": sorted(records["method"].unique()), "hardware": sorted(records["hardware"].unique())}  # fmt: skip


def collect(stores: list[str], experiments: list[str], labels: dict[str, str], filter_string: str = "") -> pd.DataFrame:
    """The records of all stores, relabelled, synced copies dropped, in a stable order."""
    from kbx.tracking.sync import SyncError, store_uri

    frames = []
    for place in stores:
        try:
            uri = store_uri(place)
        except SyncError as exc:
            raise load.AnalysisError(str(exc)) from exc
        for experiment in experiments:
            try:
                frame, selection = load.load(uri, experiment, filter_string)
            except load.AnalysisError as exc:
                log.info("skipped: %s", exc)
                continue
            log.info("%s, experiment %s: %d task runs from %d jobs", place, experiment, selection.n_task_runs,
                     len(selection.job_run_ids))  # fmt: skip
            frames.append(frame)
    frames = [f for f in frames if not f.empty]
    if not frames:
        raise load.AnalysisError(f"no kbx task runs of experiment(s) {', '.join(experiments)} in {', '.join(stores)}")
    records = pd.concat(frames, ignore_index=True)
    unknown = sorted(set(labels) - set(records["method"]))
    if unknown:
        raise load.AnalysisError(f"--label names method(s) with no runs: {', '.join(unknown)} "
                                 f"(methods present: {', '.join(sorted(records['method'].unique()))})")  # fmt: skip
    records["method"] = records["method"].replace(labels)
    before = len(records)
    records = records.drop_duplicates(list(IDENTITY), keep="first")
    if len(records) < before:
        log.info("dropped %d rows that are synced copies of rows already exported", before - len(records))
    columns = list(dict.fromkeys(RECORD_COLUMNS + JOB_COLUMNS))
    return records[columns].sort_values(list(SORT), kind="stable").reset_index(drop=True)


def merge_records(kept: pd.DataFrame, added: pd.DataFrame) -> pd.DataFrame:
    """`kept` (read back from a records CSV) and `added`, one row per record, `kept`'s where both have it."""
    columns = list(dict.fromkeys(RECORD_COLUMNS + JOB_COLUMNS))
    both = pd.concat([kept[columns], added[columns]], ignore_index=True)
    merged = both.drop_duplicates(list(IDENTITY), keep="first")
    if len(merged) < len(both):
        log.info("%d rows were already in the records file: kept as they were", len(both) - len(merged))
    return merged.sort_values(list(SORT), kind="stable").reset_index(drop=True)


def read_records(path: Path) -> pd.DataFrame:
    """A records CSV (and its jobs.csv) back as `analysis.load`'s frame, so every table and model reads it as it
    reads MLflow."""
    jobs_path = path.with_name(JOBS_FILE)
    for needed in (path, jobs_path):
        if not needed.is_file():
            raise load.AnalysisError(f"no records file at {needed} (write one with `python -m analysis export`)")
    text = {c: str for c in ("method", "hardware", "gpu_name", "category", "task", "task_version", "status", "run_id",
                             "job_run_id", *JOB_COLUMNS)}  # fmt: skip
    frame = pd.read_csv(path, dtype=text, keep_default_na=False, na_values={c: [""] for c in _numeric()})
    jobs = pd.read_csv(jobs_path, dtype=str, keep_default_na=False)
    for key in load.SAMPLE_KEYS:  # records exported before kbx counted a round's samples
        if key not in frame:
            frame[key] = np.nan
    for table, columns, where in ((frame, RECORD_COLUMNS, path), (jobs, JOB_COLUMNS, jobs_path)):
        missing = sorted(set(columns) - set(table.columns))
        if missing:
            raise load.AnalysisError(f"{where} is not a kbx records file: missing column(s) {', '.join(missing)}")
    shared = [c for c in JOB_COLUMNS if c in RECORD_COLUMNS and c != "job_run_id"]
    frame = frame.merge(jobs.drop(columns=shared), on="job_run_id", how="left", validate="many_to_one")
    frame["final"] = frame["final"].astype(str).str.lower() == "true"
    frame["timed"] = frame["round_speedup"].notna()
    return frame


def _numeric() -> list[str]:
    return [*load.METRIC_KEYS, "round"]


def parse_labels(pairs: list[str]) -> dict[str, str]:
    """`["predictions=geak"]` -> {"predictions": "geak"}; a malformed pair is the user's error."""
    labels = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise load.AnalysisError(f"--label wants METHOD=NAME, got {pair!r}")
        labels[old] = new
    return labels
