"""MLflow tracking: one parent run per job, one child run per task, one step per round.

Uses `MlflowClient` with explicit run ids (no fluent global state), batched logging, and an
embedded sqlite store under `mlruns/` unless `MLFLOW_TRACKING_URI` (or `tracking_uri`) says
otherwise. Metric values are raw numbers; a quantity that was not measured is not logged
(rather than logged as a fake 0).
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

from kbx import roofline
from kbx.eval.record import EvalRecord
from kbx.eval.sandbox_env import redact
from kbx.eval.timing_policy import TELEMETRY_FIELDS
from kbx.hardware import Hardware
from kbx.loop import TaskResult

DEFAULT_STORE_DIR = "mlruns"
DB_FILE = "mlflow.db"
ARTIFACTS_DIR = "artifacts"


def default_tracking_uri(root: Path) -> str:
    return f"sqlite:///{(root / DEFAULT_STORE_DIR / DB_FILE).resolve()}"


class Tracker:
    def __init__(self, tracking_uri: str, experiment: str, root: Path, secrets: tuple[str, ...] = ()) -> None:
        from mlflow.tracking import MlflowClient

        self.secrets = tuple(s for s in secrets if s)  # redacted from every text artifact, with the environment's
        if not tracking_uri:
            (root / DEFAULT_STORE_DIR).mkdir(parents=True, exist_ok=True)
            tracking_uri = default_tracking_uri(root)
        self.uri = tracking_uri
        self.client = MlflowClient(tracking_uri=tracking_uri)
        found = self.client.get_experiment_by_name(experiment)
        if found is None:
            location = None
            if tracking_uri.startswith("sqlite:///"):  # artifacts beside the database file
                db = Path(tracking_uri.removeprefix("sqlite:///"))
                location = (db.parent / ARTIFACTS_DIR / experiment).resolve().as_uri()
            self.experiment_id = self.client.create_experiment(experiment, artifact_location=location)
        else:
            self.experiment_id = found.experiment_id

    def start_parent(self, name: str, params: dict, tags: dict) -> str:
        run = self.client.create_run(self.experiment_id, run_name=name, tags={**tags, "kbx.role": "job"})
        self._params(run.info.run_id, params)
        return run.info.run_id

    def log_task(self, parent_id: str, result: TaskResult, method: str, hardware: Hardware) -> str:
        """A child run for one task: params, per-round metrics, every attempt's source and record,
        and for the shipped attempt, GPU telemetry and roofline figures of its largest perf shape."""
        task = result.task
        run = self.client.create_run(
            self.experiment_id,
            run_name=task.id,
            tags={"mlflow.parentRunId": parent_id, "kbx.role": "task", "kbx.method": method},
        )
        run_id = run.info.run_id
        self._params(run_id, {"task": task.id, "category": task.category, "task_version": task.spec.version,
                              "method": method, "hardware": hardware.name})  # fmt: skip
        metrics = []
        for k in result.rounds():
            metrics += _round_metrics(result.best(only=k), step=k, prefix="")
            metrics += _round_metrics(result.best(until=k), step=k, prefix="best_")
            metrics.append(_metric("attempts", len([j for j in result.judged if j.round == k]), k))
        metrics += _llm_metrics(result.calls)
        self._metrics(run_id, metrics)
        for j in result.judged:
            stem = _safe(j.record.label or f"round{j.round}")
            self._text(run_id, j.code, f"attempts/{stem}.py")
            self._text(run_id, json.dumps(j.record.to_dict(), indent=1), f"attempts/{stem}.json")
        for i, logged in enumerate(result.calls):
            c = logged.call
            entry = {"round": logged.round, "role": c.role, "sample": c.sample, "cached": c.cached, "error": c.error,
                     "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                     "cost_usd": None if math.isnan(c.cost_usd) else c.cost_usd, "latency_s": c.latency_s,
                     "cache_key": c.key, "messages": list(c.messages), "response": c.text}  # fmt: skip
            self._text(run_id, json.dumps(entry, indent=1), f"llm/round{logged.round}_{i:03d}_{_safe(c.role)}.json")
        best = result.best()
        if best.shapes:
            largest = best.shapes[-1]
            figures = roofline.classify(largest, hardware, task.spec.dtypes)
            self.client.set_tag(run_id, "kbx.roofline", figures.pop("roofline"))
            telemetry = {k: getattr(largest, k) for k in TELEMETRY_FIELDS}
            values = {**telemetry, **figures, "tflops": largest.tflops, "gbps": largest.gbps,
                      "first_call_ms": largest.first_call_ms}  # fmt: skip
            self._metrics(run_id, [_metric(k, v, 0) for k, v in values.items() if not math.isnan(v)])
            if largest.telemetry:
                self.client.set_tag(run_id, "kbx.telemetry", largest.telemetry)
        self.client.set_tag(run_id, "kbx.status", best.status.value)
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def finish_parent(self, run_id: str, summary: dict, artifacts: dict[str, str], status: str = "FINISHED") -> None:
        self._metrics(run_id, [_metric(k, v, 0) for k, v in summary.items() if not math.isnan(v)])
        for path, text in artifacts.items():
            self._text(run_id, text, path)
        self.client.set_terminated(run_id, status)

    def _text(self, run_id: str, text: str, path: str) -> None:
        self.client.log_text(run_id, redact(text, self.secrets), path)

    def log_params(self, run_id: str, params: dict) -> None:
        self._params(run_id, params)

    def _params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param

        self.client.log_batch(run_id, params=[Param(k, str(v)) for k, v in params.items()])

    def _metrics(self, run_id: str, metrics: list) -> None:
        for i in range(0, len(metrics), 900):  # MLflow accepts at most 1000 metrics per batch
            self.client.log_batch(run_id, metrics=metrics[i : i + 900])


def _round_metrics(record: EvalRecord, step: int, prefix: str) -> list:
    values = {"compiled": float(record.compiled), "correct": float(record.correct)}
    if record.timed:
        values.update(speedup=record.speedup, runtime_ms=record.runtime_ms, baseline_ms=record.baseline_ms)
    return [_metric(prefix + k, v, step) for k, v in values.items() if not math.isnan(v)]


def _llm_metrics(calls: list) -> list:
    """Per round (step): LLM calls, errors, cache hits, tokens, cost where known, summed latency."""
    by_round: dict[int, list] = {}
    for logged in calls:
        by_round.setdefault(logged.round, []).append(logged.call)
    metrics = []
    for k, cs in sorted(by_round.items()):
        costs = [c.cost_usd for c in cs if not math.isnan(c.cost_usd)]
        values = {"llm_calls": len(cs), "llm_errors": sum(bool(c.error) for c in cs),
                  "llm_cached_calls": sum(c.cached for c in cs), "prompt_tokens": sum(c.prompt_tokens for c in cs),
                  "completion_tokens": sum(c.completion_tokens for c in cs),
                  "llm_latency_s": math.fsum(c.latency_s for c in cs)}  # fmt: skip
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
