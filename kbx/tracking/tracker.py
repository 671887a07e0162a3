"""MLflow tracking: one job run per job, one task run per task, one step per round.

Job runs go to the named experiment, task runs to its companion `<experiment>-tasks`, linked to
their job by the tag `mlflow.parentRunId` and by a link in the job's description (kbx.tracking.ui_links
says why and what the UI shows). A task run's `correct`, `compiled`, `speedup`, `runtime_ms` and
`baseline_ms` are what the method ships for the task by that round (its best attempt so far);
the round's own attempt is the series `round_correct`, `round_compiled`, ...

Uses `MlflowClient` with explicit run ids (no fluent global state), batched logging, and an
embedded sqlite store under `mlruns/` unless `MLFLOW_TRACKING_URI` (or `tracking_uri`) says
otherwise. Metric values are raw numbers; a quantity that was not measured is not logged
(rather than logged as a fake 0).

A task's child run is created only once the task is complete, and marked FINISHED as its last
write, so a FINISHED child run is always whole; it carries `result.json` (every judged record
with its round, and the LLM calls' accounting) from which a resumed job reads the task back.
Every tracking call is retried with backoff while the store is unreachable (a tracking server
restarting, a database connection dropped), for up to `KBX_TRACKING_RETRY_S` seconds (120).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import socket
import time
from pathlib import Path

from kbx.contract.timing_policy import TELEMETRY_FIELDS
from kbx.core import roofline
from kbx.core import telemetry as telemetry_names
from kbx.core.hardware import Hardware
from kbx.core.record import EvalRecord, Mismatch, ShapeTiming, Status
from kbx.core.secrets import redact
from kbx.methods.loop import Judged, TaskResult
from kbx.tracking import sqlite_store, traces, ui_links

log = logging.getLogger("kbx")

DEFAULT_STORE_DIR = "mlruns"
DB_FILE = "mlflow.db"
ARTIFACTS_DIR = "artifacts"
RESULT_FILE = "result.json"  # in each task's child run: what a resumed job reads back
UNFINISHED = ("RUNNING", "FAILED", "KILLED", "SCHEDULED")
RETRY_ENV = "KBX_TRACKING_RETRY_S"
RETRY_DEFAULT_S = 120.0
# MLflow takes at most 1000 entities (metrics, params, tags) in one log_batch call: 900 metrics leave
# room for the params (at most 100) that go with the first batch.
METRICS_PER_BATCH = 900
ROUND_PREFIX = "round_"  # a task run's series of each round's own attempt (the plain names: best so far)
FAST_P = (1.0, 1.5, 2.0)  # the paper's fast_p thresholds above 0: a round's attempts faster than p x eager are counted


def default_tracking_uri(root: Path) -> str:
    return f"sqlite:///{(root / DEFAULT_STORE_DIR / DB_FILE).resolve()}"


def may_hold_runs(tracking_uri: str, root: Path) -> bool:
    """False only for a sqlite store whose file does not exist yet (it holds no run to resume)."""
    uri = tracking_uri or default_tracking_uri(root)
    if not uri.startswith("sqlite:///"):
        return True
    return Path(uri.removeprefix("sqlite:///")).exists()


@contextlib.contextmanager
def _init_lock(tracking_uri: str):
    """kbx.tracking.sqlite_store.init_lock for a sqlite store; other stores need none."""
    if not tracking_uri.startswith("sqlite:///"):
        yield
        return
    with sqlite_store.init_lock(Path(tracking_uri.removeprefix("sqlite:///"))):
        yield


def experiment_artifact_location(tracking_uri: str, name: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside the database file of a sqlite store
    (`mlruns/artifacts/<name>`), else the store's default (None)."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    db = Path(tracking_uri.removeprefix("sqlite:///"))
    return (db.parent / ARTIFACTS_DIR / name).resolve().as_uri()


class Tracker:
    def __init__(self, tracking_uri: str, experiment: str, root: Path, secrets: tuple[str, ...] = (),
                 write_traces: bool = True) -> None:  # fmt: skip
        from mlflow.tracing.client import TracingClient
        from mlflow.tracking import MlflowClient

        self.secrets = tuple(s for s in secrets if s)  # redacted from every text artifact, with the environment's
        self.write_traces = write_traces  # each LLM task's trajectory as a trace (kbx.tracking.traces)
        if not tracking_uri:
            (root / DEFAULT_STORE_DIR).mkdir(parents=True, exist_ok=True)
            tracking_uri = default_tracking_uri(root)
        self.uri = tracking_uri
        retry_s = float(os.environ.get(RETRY_ENV, RETRY_DEFAULT_S))
        with _init_lock(tracking_uri):
            if not may_hold_runs(tracking_uri, root):
                sqlite_store.create(Path(tracking_uri.removeprefix("sqlite:///")))
            self.client = Retrying(MlflowClient(tracking_uri=tracking_uri), retry_s)  # waits out a store outage
            self.tracing = Retrying(TracingClient(tracking_uri), retry_s)
            self.experiment_id = self._experiment(experiment)
            self.tasks_experiment_id = self._experiment(ui_links.tasks_experiment(experiment))
        self.experiment = experiment
        self._tag_experiments()

    def _tag_experiments(self) -> None:
        """What the MLflow UI reads: model development, the jobs view, and each experiment's description
        (written once: a user's edit of it stays)."""
        for experiment_id, other_id, is_tasks in ((self.experiment_id, self.tasks_experiment_id, False),
                                                  (self.tasks_experiment_id, self.experiment_id, True)):  # fmt: skip
            tags = ui_links.experiment_tags()
            if ui_links.NOTE_TAG not in self.client.get_experiment(experiment_id).tags:
                tags[ui_links.NOTE_TAG] = ui_links.experiment_note(self.experiment, other_id, is_tasks)
            for key, value in tags.items():
                self.client.set_experiment_tag(experiment_id, key, value)

    def jobs_url(self) -> str:
        """Where the UI shows this experiment's jobs side by side."""
        return ui_links.runs_url(self.uri, self.experiment_id)

    def _experiment(self, name: str) -> str:
        """The experiment's id, created if new; another job creating it at the same moment is no error."""
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name, artifact_location=experiment_artifact_location(self.uri, name))
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            return self.client.get_experiment_by_name(name).experiment_id

    def start_parent(self, name: str, params: dict, tags: dict) -> str:
        run = self.client.create_run(self.experiment_id, run_name=name,
                                     tags={**tags, "kbx.role": "job", "kbx.driver": driver_id()})  # fmt: skip
        run_id = run.info.run_id
        self._params(run_id, params)
        self.link_job(run_id, int(params.get("n_tasks", 0)))
        return run_id

    def link_job(self, run_id: str, n_tasks: int) -> None:
        """The job run's description links to a view of its task runs, kept on the tasks experiment."""
        self.client.set_tag(run_id, ui_links.NOTE_TAG, ui_links.job_note(self.tasks_experiment_id, run_id, n_tasks))
        for key, value in ui_links.tasks_experiment_tags(run_id).items():
            self.client.set_experiment_tag(self.tasks_experiment_id, key, value)

    def _task_runs(self, parent_id: str) -> list:
        """The job's task runs, in the companion experiment."""
        return self.client.search_runs([self.tasks_experiment_id], max_results=5000,
                                       filter_string=f"tags.`{ui_links.PARENT_TAG}` = '{parent_id}'")  # fmt: skip

    def find_resumable(self, params: dict, tags: dict | None = None) -> str | None:
        """The job run to resume: the latest job run of this experiment with the same `config_hash`
        (and the same params: versions, tasks), if it is unfinished and its driver is not alive here.
        A sweep's trial run (tag `kbx.study`) is resumed only by a job of the same study."""
        runs = self.client.search_runs([self.experiment_id], max_results=1, order_by=["attributes.start_time DESC"],
                                       filter_string=f"params.config_hash = '{params['config_hash']}' "
                                                     "and tags.`kbx.role` = 'job'")  # fmt: skip
        if not runs:
            return None
        run = runs[0]
        if run.info.status not in UNFINISHED:
            return None
        if run.data.tags.get("kbx.study") != (tags or {}).get("kbx.study"):
            return None
        if any(run.data.params.get(k) != str(v) for k, v in params.items()):
            log.warning("not resuming MLflow run %s: same config_hash, other params (versions?)", run.info.run_id)
            return None
        if driver_alive(run.data.tags.get("kbx.driver", "")):
            log.warning("not resuming MLflow run %s: its driver is still running", run.info.run_id)
            return None
        return run.info.run_id

    def reopen(self, run_id: str, tags: dict) -> None:
        """Mark a resumed job run RUNNING again, driven by this process."""
        for key, value in {**tags, "kbx.driver": driver_id()}.items():
            self.client.set_tag(run_id, key, value)
        self.client.update_run(run_id, status="RUNNING")

    def finished_tasks(self, parent_id: str, tasks: list) -> dict[str, TaskResult]:
        """Task id -> result, read back from the job's FINISHED child runs; every other child run
        (unfinished: its driver died while logging it; a duplicate; a task the LLM never answered,
        `llm_error`) is deleted, so its task is redone."""
        by_id = {t.id: t for t in tasks}
        children = self._task_runs(parent_id)
        done: dict[str, TaskResult] = {}
        for child in sorted(children, key=lambda r: r.info.start_time):
            task = by_id.get(child.data.params.get("task", ""))
            result = None
            if task is not None and task.id not in done and child.info.status == "FINISHED":
                result = self.read_task(child.info.run_id, task)
            if result is not None and result.best().status is Status.LLM_ERROR:  # no answer to judge: asked again
                result = None
            if result is None:
                log.info("deleting incomplete child run %s (%s)", child.info.run_id, child.info.run_name)
                self.delete_task_run(child.info.run_id)
            else:
                done[task.id] = result
        return done

    def drop_unfinished_children(self, parent_id: str) -> None:
        """Delete the job's child runs that are not FINISHED: strays of a create_run that reached the
        store but whose answer was lost (and was retried) during an outage."""
        for child in self._task_runs(parent_id):
            if child.info.status != "FINISHED":
                log.info("deleting stray child run %s (%s)", child.info.run_id, child.info.run_name)
                self.delete_task_run(child.info.run_id)

    def delete_task_run(self, run_id: str) -> None:
        """Delete a task run and the trace linked to it (one its driver wrote before dying)."""
        traces.delete_run_traces(self.tracing, self.tasks_experiment_id, run_id)
        self.client.delete_run(run_id)

    def read_task(self, run_id: str, task) -> TaskResult | None:
        """A task's result from its child run's result.json; None when it has none (an older run)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="kbx-resume-") as tmp:
            try:
                path = self.client.download_artifacts(run_id, RESULT_FILE, tmp)
                data = json.loads(Path(path).read_text())
            except Exception as exc:
                if transient(exc):
                    raise
                log.info("child run %s has no readable %s (%s): its task is redone", run_id, RESULT_FILE, exc)
                return None
        judged = [Judged(int(j["round"]), record_from_dict(j["record"]), "") for j in data["judged"]]
        return TaskResult(task, judged, [_logged_call(c) for c in data.get("calls", [])])

    def log_task(self, parent_id: str, result: TaskResult, method: str, hardware: Hardware,
                 tags: dict | None = None) -> str:
        """A task run: params, per-round metrics, every attempt's source and record, and for the
        shipped attempt, GPU telemetry and roofline figures of its largest perf shape.

        Four tracking calls a task (create, one batch of params and metrics, one upload of every
        file, terminate), two more for the trace of an LLM method's task: each call is a store
        transaction, and a job logs 184 of these."""
        task, best = result.task, result.best()
        run_tags = {ui_links.PARENT_TAG: parent_id, "kbx.role": "task", "kbx.method": method,
                    "kbx.status": best.status.value, **(tags or {})}  # fmt: skip
        metrics = []
        for k in result.rounds():
            metrics += _round_metrics(result.best(until=k), step=k, prefix="")  # what the method ships by round k
            metrics += _round_metrics(result.best(only=k), step=k, prefix=ROUND_PREFIX)  # round k's own attempt
            metrics.append(_metric("attempts", len([j for j in result.judged if j.round == k]), k))
            metrics += _sample_metrics([j.record for j in result.judged if j.round == k], k, hardware.device == "cuda")
        metrics += _llm_metrics(result.calls)
        if best.shapes:
            largest = best.shapes[-1]
            figures = roofline.classify(largest, hardware, task.spec.dtypes)
            run_tags["kbx.roofline"] = figures.pop("roofline")
            run_tags["kbx.host_bound"] = str(largest.host_bound).lower()  # its time is the host's launch rate
            telemetry = telemetry_names.mlflow_names({k: getattr(largest, k) for k in TELEMETRY_FIELDS})
            values = {**telemetry, **figures, "tflops": largest.tflops, "gbps": largest.gbps,
                      "first_call_ms": largest.first_call_ms, "launch_ms": largest.launch_ms}  # fmt: skip
            metrics += [_metric(k, v, 0) for k, v in values.items() if not math.isnan(v)]
            if largest.telemetry:
                run_tags["kbx.telemetry"] = largest.telemetry
            elif not math.isnan(largest.throttle_reasons):
                run_tags["kbx.gpu_throttle"] = telemetry_names.throttle_names(int(largest.throttle_reasons))
        run_id = self.client.create_run(self.tasks_experiment_id, run_name=task.id, tags=run_tags).info.run_id
        params = {"task": task.id, "category": task.category, "task_version": task.spec.version, "method": method,
                  "hardware": hardware.name}  # fmt: skip
        self._batch(run_id, params, metrics)
        self._files(run_id, _task_files(result))
        if self.write_traces and result.calls:
            traces.write(self.tracing, *traces.task_trace(result, self.tasks_experiment_id, run_id, method, hardware,
                                                          self.secrets))  # fmt: skip
        self.client.set_terminated(run_id, "FINISHED")  # last: a FINISHED task run is whole
        return run_id

    def finish_parent(self, run_id: str, summary: dict, artifacts: dict[str, str], status: str = "FINISHED",
                      extra: dict | None = None) -> None:
        """`summary` (kbx.job.summary's figures) goes under the headline prefix, `extra` (LLM totals) as named."""
        values = {**ui_links.headline(summary), **(extra or {})}
        self._metrics(run_id, [_metric(k, v, 0) for k, v in values.items() if not math.isnan(v)])
        self._files(run_id, artifacts)
        self.client.set_terminated(run_id, status)

    def _files(self, run_id: str, files: dict[str, str]) -> None:
        """Text files (path -> text), redacted, uploaded as one directory: one call, not one a file."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="kbx-artifacts-") as tmp:
            for path, text in files.items():
                target = Path(tmp) / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(redact(text, self.secrets))
            self.client.log_artifacts(run_id, tmp)

    def log_params(self, run_id: str, params: dict) -> None:
        self._params(run_id, params)

    def log_new_params(self, run_id: str, params: dict) -> None:
        """Params a resumed run may already hold: absent ones are logged, a different value goes to
        the tag `kbx.resumed.<key>` (MLflow params are immutable)."""
        have = self.client.get_run(run_id).data.params
        self._params(run_id, {k: v for k, v in params.items() if k not in have})
        for k, v in params.items():
            if k in have and have[k] != str(v):
                self.client.set_tag(run_id, f"kbx.resumed.{k}", str(v))

    def _params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param

        self.client.log_batch(run_id, params=[Param(k, str(v)) for k, v in params.items()])

    def _metrics(self, run_id: str, metrics: list) -> None:
        self._batch(run_id, {}, metrics)

    def _batch(self, run_id: str, params: dict, metrics: list) -> None:
        """Params and metrics in as few calls as MLflow's batch limits allow (the params go with the first)."""
        from mlflow.entities import Param

        first = [Param(k, str(v)) for k, v in params.items()]
        for i in range(0, max(len(metrics), 1), METRICS_PER_BATCH):
            chunk = metrics[i : i + METRICS_PER_BATCH]
            if chunk or first:
                self.client.log_batch(run_id, metrics=chunk, params=first)
            first = []


def _task_files(result: TaskResult) -> dict[str, str]:
    """A task run's files: each attempt's source and record, each LLM call, and result.json (what resume reads)."""
    files = {}
    for j in result.judged:
        stem = _safe(j.record.label or f"round{j.round}")
        files[f"attempts/{stem}.py"] = j.code
        files[f"attempts/{stem}.json"] = json.dumps(j.record.to_dict(), indent=1)
    for i, logged in enumerate(result.calls):
        c = logged.call
        entry = {"round": logged.round, "role": c.role, "sample": c.sample, "proposal": logged.proposal,
                 "model": c.model, "temperature": _none_if_nan(c.temperature), "max_tokens": c.max_tokens,
                 "cached": c.cached, "error": c.error,
                 "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                 "cost_usd": _none_if_nan(c.cost_usd), "latency_s": c.latency_s, "failed_s": c.failed_s,
                 "finish_reason": c.finish_reason, "served_model": c.served_model,
                 "cache_key": c.key, "messages": list(c.messages), "response": c.text}  # fmt: skip
        files[f"llm/round{logged.round}_{i:03d}_{_safe(c.role)}.json"] = json.dumps(entry, indent=1)
    saved = {"judged": [{"round": j.round, "record": j.record.to_dict()} for j in result.judged],
             "calls": [_call_dict(c) for c in result.calls]}  # fmt: skip
    files[RESULT_FILE] = json.dumps(saved)
    return files


def _round_metrics(record: EvalRecord, step: int, prefix: str) -> list:
    values = {"compiled": float(record.compiled), "correct": float(record.correct)}
    if record.timed:
        values.update(speedup=record.speedup, runtime_ms=record.runtime_ms, baseline_ms=record.baseline_ms)
    return [_metric(prefix + k, v, step) for k, v in values.items() if not math.isnan(v)]


def _sample_metrics(records: list[EvalRecord], step: int, timed_device: bool) -> list:
    """A round's attempts as samples (pass@k, fast_p@k: analysis.passk): how many have a verdict on the kernel,
    how many are correct, and on a GPU, where every correct kernel is timed, how many are faster than p x eager."""
    judged = [r for r in records if r.status.judged]
    correct = [r for r in judged if r.correct]
    values = {"judged_attempts": len(judged), "correct_attempts": len(correct)}
    if timed_device and all(r.timed for r in correct):
        values.update({f"fast_{p:g}_attempts": sum(r.speedup > p for r in correct) for p in FAST_P})
    return [_metric(key, v, step) for key, v in values.items()]


def _llm_metrics(calls: list) -> list:
    """Per round (step): LLM calls, errors, cache hits, answers cut at their token limit, tokens, cost where
    known, summed latency of the answered requests and time lost in failed tries (kbx.llm.client.Call)."""
    by_round: dict[int, list] = {}
    for logged in calls:
        by_round.setdefault(logged.round, []).append(logged.call)
    metrics = []
    for k, cs in sorted(by_round.items()):
        costs = [c.cost_usd for c in cs if not math.isnan(c.cost_usd)]
        values = {"llm_calls": len(cs), "llm_errors": sum(bool(c.error) for c in cs),
                  "llm_cached_calls": sum(c.cached for c in cs), "prompt_tokens": sum(c.prompt_tokens for c in cs),
                  "completion_tokens": sum(c.completion_tokens for c in cs),
                  "llm_truncated": sum(c.truncated for c in cs), "llm_latency_s": math.fsum(c.latency_s for c in cs),
                  "llm_failed_s": math.fsum(c.failed_s for c in cs)}  # fmt: skip
        if costs:
            values["cost_usd"] = math.fsum(costs)
        for role in sorted({c.role for c in cs}):  # per agent role: generator, reflector, judge, planner, ...
            mine = [c for c in cs if c.role == role]
            values[f"llm_calls_{role}"] = len(mine)
            values[f"tokens_{role}"] = sum(c.tokens for c in mine)
        metrics += [_metric(key, v, k) for key, v in values.items()]
    return metrics


def _metric(key: str, value: float, step: int):
    from mlflow.entities import Metric

    return Metric(key, float(value), int(time.time() * 1000), step)


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label.replace("/", "__"))


# ----- resume: identity of a driver, records read back ---------------------------------------


def driver_id() -> str:
    """host:pid:start-time of this process (the start time tells a reused pid apart)."""
    import psutil

    return f"{socket.gethostname()}:{os.getpid()}:{int(psutil.Process().create_time())}"


def driver_alive(driver: str) -> bool:
    """Whether the process that wrote `driver` still runs; a driver on another host counts as dead."""
    import psutil

    try:
        host, pid, started = driver.rsplit(":", 2)
        if host != socket.gethostname() or int(pid) == os.getpid():
            return False
        return int(psutil.Process(int(pid)).create_time()) == int(started)
    except (ValueError, psutil.Error):
        return False


def _floats(cls, data: dict) -> dict:
    """JSON null back to NaN for the float fields of a record dataclass."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            v = data[f.name]
            out[f.name] = math.nan if v is None and f.type in ("float", float) else v
    return out


def record_from_dict(data: dict) -> EvalRecord:
    """The inverse of `EvalRecord.to_dict`."""
    values = _floats(EvalRecord, data)
    values["status"] = Status(data["status"])
    m = _floats(Mismatch, data.get("mismatch") or {})
    for key in ("indices", "got", "expected"):
        m[key] = _tuple(m.get(key, ()))
    values["mismatch"] = Mismatch(**m)
    values["shapes"] = tuple(ShapeTiming(**_floats(ShapeTiming, s)) for s in data.get("shapes") or ())
    values["harness_failures"] = tuple(data.get("harness_failures") or ())
    return EvalRecord(**values)


def _tuple(value):
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


_CALL_FIELDS = ("role", "sample", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "cached", "error",
                "key", "finish_reason", "max_tokens", "served_model", "failed_s")  # fmt: skip


def _call_dict(logged) -> dict:
    c = logged.call
    values = {k: (None if k == "cost_usd" and math.isnan(c.cost_usd) else getattr(c, k)) for k in _CALL_FIELDS}
    return {"round": logged.round, "proposal": logged.proposal, **values}


def _logged_call(data: dict):
    """The accounting of one LLM call (its messages and response stay in the child run's llm/ artifacts)."""
    from kbx.llm.client import Call
    from kbx.methods.llm import LoggedCall

    values = {k: data[k] for k in _CALL_FIELDS if k in data}
    values["cost_usd"] = math.nan if values.get("cost_usd") is None else values["cost_usd"]
    return LoggedCall(int(data["round"]), Call(messages=(), text="", **values), str(data.get("proposal", "")))


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


# ----- outages: retry tracking calls while the store is unreachable ----------------------------

_TRANSIENT_TEXT = ("failed with exception", "max retries exceeded", "connection refused", "connection reset",
                   "connection aborted", "remotedisconnected", "temporarily unavailable", "database is locked",
                   "server closed the connection", "could not connect", "timed out",
                   "failed with error code 5")  # fmt: skip


def transient(exc: BaseException) -> bool:
    """Whether a tracking error is worth retrying: the store is unreachable, not the call wrong."""
    import requests

    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout, ConnectionError,
                        TimeoutError)):  # fmt: skip
        return True
    try:
        import sqlalchemy.exc

        if isinstance(exc, (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError)):
            return True
    except ImportError:
        pass
    from mlflow.exceptions import MlflowException

    if isinstance(exc, MlflowException):
        if exc.error_code in ("TEMPORARILY_UNAVAILABLE", "INTERNAL_ERROR", "REQUEST_LIMIT_EXCEEDED"):
            return True
        text = str(exc).lower()
        return any(t in text for t in _TRANSIENT_TEXT)
    cause = exc.__cause__ or exc.__context__
    return cause is not None and cause is not exc and transient(cause)


class Retrying:
    """Wraps an MlflowClient: a call that fails because the store is unreachable is retried with
    exponential backoff (1 s doubling to 15 s) until `deadline_s` has passed since its first try.
    Creating a run is not idempotent: a retried create may leave a stray RUNNING run, which a
    resumed job deletes (see Tracker.finished_tasks)."""

    def __init__(self, client, deadline_s: float = RETRY_DEFAULT_S, first_delay_s: float = 1.0) -> None:
        self._client = client
        self.deadline_s = deadline_s
        self.first_delay_s = first_delay_s

    def __getattr__(self, name: str):
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            start, delay = time.monotonic(), self.first_delay_s
            while True:
                try:
                    return attr(*args, **kwargs)
                except Exception as exc:
                    waited = time.monotonic() - start
                    if not transient(exc) or waited + delay > self.deadline_s:
                        raise
                    log.warning("MLflow %s failed (%s); retrying in %.1f s (%.0f s of %.0f s spent)", name,
                                str(exc).splitlines()[0][:200], delay, waited, self.deadline_s)  # fmt: skip
                    time.sleep(delay)
                    delay = min(delay * 2, 15.0)

        return call
