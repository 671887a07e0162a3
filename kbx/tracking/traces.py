"""A task's trajectory as an MLflow trace: every LLM call, every proposed kernel and its verdict.

One trace per task run, in the task run's experiment, linked to it by the trace metadata
`mlflow.sourceRun` (the run's Traces tab lists it; `search_traces(run_id=...)` finds it). One trace
per task rather than per attempt: an agent's rounds feed each other (a verdict becomes the next
prompt; GEAK reflects before it generates), and the UI shows a trace as one tree, so the whole
trajectory reads top to bottom; split per attempt, it fell apart into rows of one call each.

    <task id>                    AGENT       inputs: task, method, model; outputs: the shipped verdict
      round <k>                  CHAIN
        <role> [sample <s>]      CHAT_MODEL  one LLM call: messages in, the answer out
          try <i>                LLM         each request to the provider, when there was more than one
        evaluate <label>         EVALUATOR   one proposed kernel: its code in, its verdict out

An LLM call's span carries its role, round, sample, model, sampling parameters, token usage
(`mlflow.chat.tokenUsage`), cost where known (`mlflow.llm.cost`), latency, whether kbx's cache
answered (`kbx.cached`: a replayed call is a span like any other, with no tries) and its error.
An evaluation span's outputs are the kernel's record, and its attribute `kbx.profile` what kbx measured
per perf shape (kbx.llm.profile: time against eager, GB/s and TFLOP/s against the GPU's peaks, roofline
class, launches per call, launch-bound). Each kernel's verdict is an assessment `verdict` (value: the
status; rationale: the reason; metadata: compiled, correct, speedup, round, label) on its evaluation
span; the shipped kernel's `correct` and `speedup` are assessments of the whole trace, the columns of
the UI's traces table.
A span of kbx's own failure (a provider error, a harness error) has status ERROR; a kernel that
fails its tests does not: that is a verdict, not an error.

The spans are written once the task is done, from what the job recorded (when each call started,
its tries, when each verdict landed), straight to the tracking store: no OpenTelemetry tracer, no
global tracking URI, no active run. Every text (prompts, answers, errors, reasons) is redacted.
"""

from __future__ import annotations

import base64
import json
import math
import os
import time
import uuid

from kbx.core.hardware import Hardware
from kbx.core.record import EvalRecord
from kbx.core.secrets import redact
from kbx.llm.profile import shape_profile
from kbx.methods.loop import TaskResult

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
PREVIEW_CHARS = 1000  # the traces table's input/output columns show this much
SOURCE = ("CODE", "kbx.evaluator")  # an assessment's source: kbx's evaluator, a program
VERDICT = "verdict"
SOURCE_TRACE_TAG = "kbx.source_trace"  # on a trace copied by kbx.sync: the id it was copied from


def task_trace(result: TaskResult, experiment_id: str, run_id: str, method: str, hardware: Hardware,
               secrets: tuple[str, ...] = ()):  # fmt: skip
    """(TraceInfo, spans) of a finished task whose method called an LLM, judged on `hardware`."""
    from mlflow.entities import TraceInfo, TraceLocation, TraceState

    trace = _Builder(f"tr-{uuid.uuid4().hex}", secrets, hardware, list(result.task.spec.dtypes))
    root = trace.new_id()
    rounds = sorted({c.round for c in result.calls} | {j.round for j in result.judged})
    for k in rounds:
        trace.round(root, k, [c for c in result.calls if c.round == k], [j for j in result.judged if j.round == k])
    best = result.best()
    model = next((c.call.model for c in result.calls if c.call.model), "")
    inputs = {"task": result.task.id, "method": method, "model": model}
    outputs = _verdict(best) | {"attempt": best.label}
    start, end = trace.extent()
    failed = any(c.call.error for c in result.calls) or any(not j.record.status.judged for j in result.judged)
    trace.span(root, None, result.task.id, "AGENT", start, end, inputs, outputs, {"kbx.method": method})
    info = TraceInfo(
        trace_id=trace.trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start // NS_PER_MS, execution_duration=(end - start) // NS_PER_MS,
        state=TraceState.ERROR if failed else TraceState.OK,
        request_preview=_preview(inputs, secrets), response_preview=_preview(outputs, secrets),
        trace_metadata={"mlflow.sourceRun": run_id}, tags={"mlflow.traceName": result.task.id, "kbx.task":
        result.task.id, "kbx.method": method}, assessments=trace.assessments + _shipped(best, trace.trace_id),
    )  # fmt: skip
    return info, trace.spans


def write(client, info, spans) -> str:
    """Store one trace (spans first, then its info and assessments: the order MLflow's own exporter
    keeps). `client` is an mlflow TracingClient for the store."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # a span's cost may be priced through litellm
    client.log_spans(info.experiment_id, spans)
    client.start_trace(info)
    return info.trace_id


def run_trace_ids(client, experiment_id: str, run_id: str) -> list[str]:
    """The ids of the traces linked to a run."""
    found, token = [], None
    while True:
        page = client.search_traces(locations=[experiment_id], run_id=run_id, include_spans=False, page_token=token)
        found += [t.info.trace_id for t in page]
        token = page.token
        if not token:
            return found


def delete_run_traces(client, experiment_id: str, run_id: str) -> int:
    """Delete the traces of a run that is deleted (an unfinished task run, a cut-short copy)."""
    ids = run_trace_ids(client, experiment_id, run_id)
    if ids:
        client.delete_traces(experiment_id, trace_ids=ids)
    return len(ids)


def copy_trace(trace, experiment_id: str, run_id: str):
    """(TraceInfo, spans) of `trace` (with spans and assessments) under a new id in another store's
    experiment, linked to `run_id` (the copy of its run) and tagged with the id it came from."""
    from mlflow.entities import Span, TraceInfo, TraceLocation

    new_id = f"tr-{uuid.uuid4().hex}"
    encoded = _b64(int(new_id.removeprefix("tr-"), 16), 16)
    spans = []
    for span in trace.data.spans:
        data = span.to_dict()
        data["trace_id"] = encoded
        data["attributes"] = {**data["attributes"], "mlflow.traceRequestId": json.dumps(new_id)}
        spans.append(Span.from_dict(data))
    old = trace.info
    tags = {k: v for k, v in old.tags.items() if not k.startswith("mlflow.") or k == "mlflow.traceName"}
    metadata = {k: v for k, v in old.trace_metadata.items() if k == "mlflow.sourceRun" or not k.startswith("mlflow.")}
    info = TraceInfo(
        trace_id=new_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=old.request_time, execution_duration=old.execution_duration, state=old.state,
        request_preview=old.request_preview, response_preview=old.response_preview,
        trace_metadata={**metadata, "mlflow.sourceRun": run_id},
        tags={**tags, SOURCE_TRACE_TAG: old.tags.get(SOURCE_TRACE_TAG, old.trace_id)},
        assessments=[_assessment_copy(a, new_id) for a in old.assessments],
    )  # fmt: skip
    return info, spans


class _Builder:
    """The spans and assessments of one trace as they are added."""

    def __init__(self, trace_id: str, secrets: tuple[str, ...], hardware: Hardware, dtypes: list[str]) -> None:
        self.trace_id, self.secrets, self.hardware, self.dtypes = trace_id, secrets, hardware, dtypes
        self.spans: list = []
        self.assessments: list = []

    @staticmethod
    def new_id() -> int:
        return uuid.uuid4().int >> 64 or 1  # 64 bits, never 0 (OpenTelemetry's "no span")

    def extent(self) -> tuple[int, int]:
        return min(s.start_time_ns for s in self.spans), max(s.end_time_ns for s in self.spans)

    def round(self, root: int, k: int, calls: list, judged: list) -> None:
        """Round k's span, with its calls and evaluations under it (a kernel is judged once its call has ended)."""
        span_id = self.new_id()
        answered = max((self.call(span_id, logged) for logged in calls), default=_ns(time.time()))
        ends = [self.evaluation(span_id, j, answered) for j in judged]
        mine = [s for s in self.spans if s.parent_id == format(span_id, "016x")]
        start = min(s.start_time_ns for s in mine) if mine else answered
        outputs = {"attempts": len(judged), "correct": sum(j.record.correct for j in judged)}
        self.span(span_id, root, f"round {k}", "CHAIN", start, max([answered, *ends]), {"round": k}, outputs,
                  {"kbx.round": k})  # fmt: skip

    def call(self, parent: int, logged) -> int:
        """One LLM call, and each of its requests when it made more than one; returns when it ended."""
        c = logged.call
        span_id = self.new_id()
        start = _ns(c.started_s)
        tries = [(_ns(t.started_s), _ns(t.started_s + t.duration_s), t.error) for t in c.tries]
        end = max([start, *(e for _, e, _ in tries)])
        if len(tries) > 1:
            for i, (t_start, t_end, error) in enumerate(tries, 1):
                self.span(self.new_id(), span_id, f"try {i}", "LLM", t_start, t_end, None, None, {"kbx.try": i}, error)
        name = c.role + (f" sample {c.sample}" if c.sample else "")
        answer = {"role": "assistant", "content": c.text}
        outputs = None if c.error else {"choices": [{"index": 0, "message": answer}]}
        self.span(span_id, parent, name, "CHAT_MODEL", start, end, {"messages": list(c.messages)}, outputs,
                  _call_attributes(logged), c.error)  # fmt: skip
        return end

    def evaluation(self, parent: int, judged, not_before: int) -> int:
        """One proposed kernel's judging, and its verdict as an assessment on this span; returns when it ended."""
        from mlflow.entities import AssessmentSource, Feedback

        r = judged.record
        span_id = self.new_id()
        start = max(_ns(judged.started_s), not_before)
        end = max(start, _ns(judged.started_s + r.wall_s))
        error = "" if r.status.judged else f"{r.status.value}: {r.reason}"
        attributes = {"kbx.label": r.label, "kbx.status": r.status.value, "kbx.round": judged.round,
                      "kbx.profile": [{k: _finite(v) if isinstance(v, float) else v for k, v in
                                       shape_profile(s, self.hardware, self.dtypes).items()} for s in r.shapes]}  # fmt: skip
        self.span(span_id, parent, f"evaluate {r.label}", "EVALUATOR", start, end, {"label": r.label, "code":
                  judged.code}, r.to_dict(), attributes, error)  # fmt: skip
        metadata = {k: json.dumps(v) for k, v in _verdict(r).items() if k not in ("status", "reason") and v is not None}
        metadata.update(round=str(judged.round), label=r.label, judged=json.dumps(r.status.judged))
        self.assessments.append(Feedback(name=VERDICT, value=r.status.value, source=AssessmentSource(*SOURCE),
                                         trace_id=self.trace_id, span_id=format(span_id, "016x"), metadata=metadata,
                                         rationale=self.clean(r.reason) or None))  # fmt: skip
        return end

    def span(self, span_id: int, parent: int | None, name: str, kind: str, start: int, end: int, inputs, outputs,
             attributes: dict, error: str = "") -> None:  # fmt: skip
        from mlflow.entities import Span

        values = {"mlflow.traceRequestId": self.trace_id, "mlflow.spanType": kind, **attributes}
        if inputs is not None:
            values["mlflow.spanInputs"] = inputs
        if outputs is not None:
            values["mlflow.spanOutputs"] = outputs
        self.spans.append(Span.from_dict({
            "trace_id": _b64(int(self.trace_id.removeprefix("tr-"), 16), 16), "span_id": _b64(span_id, 8),
            "parent_span_id": _b64(parent, 8) if parent is not None else None, "name": name,
            "start_time_unix_nano": start, "end_time_unix_nano": max(start, end), "events": [],
            "status": {"code": "STATUS_CODE_ERROR" if error else "STATUS_CODE_OK", "message": self.clean(error)},
            "attributes": {k: self.clean(json.dumps(v, ensure_ascii=False, default=str)) for k, v in values.items()},
        }))  # fmt: skip

    def clean(self, text: str) -> str:
        return redact(text, self.secrets) if text else text


def _call_attributes(logged) -> dict:
    """What a call's span says besides its messages: kbx's accounting, and MLflow's usage and cost keys."""
    c = logged.call
    values = {"kbx.role": c.role, "kbx.round": logged.round, "kbx.sample": c.sample, "kbx.proposal": logged.proposal,
              "kbx.cached": c.cached, "kbx.latency_s": c.latency_s, "kbx.temperature": _finite(c.temperature),
              "kbx.max_tokens": c.max_tokens, "kbx.cache_key": c.key, "kbx.tries": len(c.tries), "kbx.error": c.error,
              "kbx.finish_reason": c.finish_reason, "kbx.served_model": c.served_model, "mlflow.llm.model": c.model}  # fmt: skip
    if c.tokens:
        values["mlflow.chat.tokenUsage"] = {"input_tokens": c.prompt_tokens, "output_tokens": c.completion_tokens,
                                            "total_tokens": c.tokens}  # fmt: skip
    if not math.isnan(c.cost_usd):
        values["mlflow.llm.cost"] = {"total_cost": c.cost_usd}
    return values


def _verdict(record: EvalRecord) -> dict:
    """The fields of a verdict a reader looks for first."""
    return {"status": record.status.value, "compiled": record.compiled, "correct": record.correct,
            "speedup": _finite(record.speedup), "reason": record.reason}  # fmt: skip


def _shipped(best: EvalRecord, trace_id: str) -> list:
    """The shipped kernel's correctness, and its speedup where it was timed: the trace's own assessments."""
    from mlflow.entities import AssessmentSource, Feedback

    out = [Feedback(name="correct", value=best.correct, source=AssessmentSource(*SOURCE), trace_id=trace_id,
                    rationale=f"{best.label}: {best.status.value}")]  # fmt: skip
    if best.correct and best.timed and not math.isnan(best.speedup):
        out.append(Feedback(name="speedup", value=best.speedup, source=AssessmentSource(*SOURCE), trace_id=trace_id))
    return out


def _assessment_copy(assessment, trace_id: str):
    """An assessment for the copied trace (its own new id; the span ids are the original spans')."""
    from mlflow.entities import Feedback

    value = assessment.feedback.value if assessment.feedback is not None else None
    return Feedback(name=assessment.name, value=value, source=assessment.source, trace_id=trace_id,
                    span_id=assessment.span_id, metadata=assessment.metadata, rationale=assessment.rationale,
                    create_time_ms=assessment.create_time_ms)  # fmt: skip


def _preview(value: dict, secrets: tuple[str, ...]) -> str:
    return redact(json.dumps(value, ensure_ascii=False), secrets)[:PREVIEW_CHARS]


def _b64(value: int, size: int) -> str:
    """An OpenTelemetry id as OTLP's JSON writes it: big-endian bytes in base64."""
    return base64.b64encode(value.to_bytes(size, "big")).decode()


def _ns(seconds: float) -> int:
    return int(seconds * NS_PER_S)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value
