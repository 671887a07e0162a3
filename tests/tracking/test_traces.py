"""A task's trajectory as an MLflow trace (kbx.tracking.traces), written by the Tracker beside its task run.

The result is built by hand (tests/llm_results.py: calls with their tries, judged records with their
times), so every kind of span is exercised in seconds: a call answered on its second request, a call
replayed from kbx's cache, a call that failed for good, a harness error; tests/job/test_llm_cli.py runs the
real job.
"""

from __future__ import annotations

import dataclasses

from kbx.methods.llm import LoggedCall
from kbx.methods.loop import TaskResult
from kbx.tracking.tracker import Tracker
from tests.llm_results import CPU, SECRET, SYSTEM, T0, trajectory


def log(tmp_path, result: TaskResult, write_traces: bool = True) -> tuple[Tracker, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", "t", tmp_path, secrets=(SECRET,), write_traces=write_traces)
    parent = tracker.start_parent("job", {"method": "geak"}, {})
    return tracker, tracker.log_task(parent, result, "geak", CPU)


def the_trace(tracker: Tracker, run_id: str):
    from mlflow.tracking import MlflowClient

    found = MlflowClient(tracker.uri).search_traces(locations=[tracker.tasks_experiment_id], run_id=run_id)
    assert len(found) == 1
    return found[0]


def test_every_call_and_kernel_is_a_span_of_one_trace_linked_to_the_task_run(tmp_path):
    tracker, run_id = log(tmp_path, trajectory())
    trace = the_trace(tracker, run_id)
    assert trace.info.trace_metadata["mlflow.sourceRun"] == run_id
    assert trace.info.tags["mlflow.traceName"] == "Math/add" and trace.info.state.value == "ERROR"  # a harness error
    spans = {s.span_id: s for s in trace.data.spans}
    tree = sorted((spans[s.parent_id].name if s.parent_id else "", s.name, s.span_type) for s in spans.values())
    assert tree == sorted([
        ("", "Math/add", "AGENT"), ("Math/add", "round 0", "CHAIN"), ("Math/add", "round 1", "CHAIN"),
        ("round 0", "generator", "CHAT_MODEL"), ("generator", "try 1", "LLM"), ("generator", "try 2", "LLM"),
        ("round 0", "judge", "CHAT_MODEL"), ("round 0", "evaluate round0/cand0", "EVALUATOR"),
        ("round 1", "reflector", "CHAT_MODEL"), ("round 1", "generator", "CHAT_MODEL"),
        ("round 1", "generator sample 1", "CHAT_MODEL"),
        ("round 1", "evaluate round1/cand0", "EVALUATOR"), ("round 1", "evaluate round1/cand1", "EVALUATOR"),
    ])  # fmt: skip
    by_name = {s.name: s for s in spans.values()}
    first = by_name["try 1"]
    assert first.status.status_code.value == "ERROR" and "500" in first.status.description
    assert first.start_time_ns == int(T0 * 1e9) and by_name["try 2"].end_time_ns == int((T0 + 3.5) * 1e9)
    gen = next(s for s in spans.values() if s.name == "generator" and s.get_attribute("kbx.round") == 0)
    assert gen.inputs["messages"][0] == SYSTEM and gen.outputs["choices"][0]["message"]["content"].startswith("```")
    assert gen.get_attribute("kbx.temperature") == 0.7 and gen.get_attribute("kbx.tries") == 2
    assert gen.get_attribute("mlflow.llm.model") == "openai/x" and gen.get_attribute("kbx.proposal") == "cand0"
    assert gen.get_attribute("mlflow.chat.tokenUsage") == {"input_tokens": 40, "output_tokens": 10, "total_tokens": 50}
    judge = by_name["judge"]
    assert judge.get_attribute("kbx.cached") is True and judge.get_attribute("mlflow.llm.cost")["total_cost"] == 0.002
    assert judge.start_time_ns == judge.end_time_ns  # a replayed answer takes no time at the provider
    assert by_name["reflector"].status.status_code.value == "ERROR" and by_name["reflector"].outputs is None
    assert by_name["evaluate round1/cand1"].status.status_code.value == "ERROR"  # kbx's failure, not the kernel's
    assert by_name["evaluate round0/cand0"].status.status_code.value == "OK"  # a wrong kernel is a verdict
    assert by_name["evaluate round1/cand0"].outputs["speedup"] == 2.0
    (profile,) = by_name["evaluate round1/cand0"].get_attribute("kbx.profile")  # what kbx measured of its one shape
    assert (profile["shape"], profile["speedup"], profile["gbps"], profile["roofline"]) == ("n=1M", 2.0, 2000.0, "unknown")
    assert profile["bw_util"] is None and profile["launch_bound"] is False  # the CPU profile has no peaks
    assert by_name["evaluate round0/cand0"].start_time_ns >= gen.end_time_ns  # judged after it was written
    assert trace.info.token_usage["total_tokens"] == 50 + 50 + 40 + 50 + 50


def test_each_verdict_is_an_assessment_on_its_evaluation_span_and_the_shipped_one_on_the_trace(tmp_path):
    tracker, run_id = log(tmp_path, trajectory())
    trace = the_trace(tracker, run_id)
    spans = {s.span_id: s.name for s in trace.data.spans}
    verdicts = {spans[a.span_id]: a for a in trace.info.assessments if a.name == "verdict"}
    assert {k: v.value for k, v in verdicts.items()} == {"evaluate round0/cand0": "mismatch",
                                                         "evaluate round1/cand0": "ok",
                                                         "evaluate round1/cand1": "harness_error"}  # fmt: skip
    wrong = verdicts["evaluate round0/cand0"]
    assert wrong.rationale == "case 0: 3 of 8 differ" and wrong.source.source_type == "CODE"
    assert wrong.metadata == {"compiled": "true", "correct": "false", "round": "0", "label": "round0/cand0",
                              "judged": "true"}  # fmt: skip
    assert verdicts["evaluate round1/cand0"].metadata["speedup"] == "2.0"
    assert verdicts["evaluate round1/cand1"].metadata["judged"] == "false"
    shipped = {a.name: a.value for a in trace.info.assessments if a.span_id is None}
    assert shipped == {"correct": True, "speedup": 2.0}


def test_secrets_are_redacted_from_every_span(tmp_path):
    tracker, run_id = log(tmp_path, trajectory())
    trace = the_trace(tracker, run_id)
    assert SECRET not in trace.to_json()
    assert "[redacted]" in next(s for s in trace.data.spans if s.name == "judge").inputs["messages"][1]["content"]


def test_traces_off_writes_none_and_a_deleted_task_run_takes_its_trace_along(tmp_path):
    from mlflow.tracking import MlflowClient

    tracker, run_id = log(tmp_path / "off", trajectory(), write_traces=False)
    assert not MlflowClient(tracker.uri).search_traces(locations=[tracker.tasks_experiment_id])
    tracker, run_id = log(tmp_path / "on", trajectory())
    assert the_trace(tracker, run_id)
    tracker.delete_task_run(run_id)
    assert not MlflowClient(tracker.uri).search_traces(locations=[tracker.tasks_experiment_id])


def test_a_task_without_llm_calls_gets_no_trace(tmp_path):
    from mlflow.tracking import MlflowClient

    result = trajectory()
    tracker, _ = log(tmp_path, TaskResult(result.task, result.judged, []))
    assert not MlflowClient(tracker.uri).search_traces(locations=[tracker.tasks_experiment_id])


def shape_of(trace) -> list[tuple]:
    """Each span but the provider's requests: its parent's name, name, type and inputs."""
    spans = {s.span_id: s for s in trace.data.spans}
    return sorted((spans[s.parent_id].name if s.parent_id else "", s.name, s.span_type, repr(s.inputs))
                  for s in spans.values() if s.span_type != "LLM")  # fmt: skip


def test_a_replayed_call_gives_the_same_spans_as_the_provider(tmp_path):
    result = trajectory()
    replayed = [LoggedCall(c.round, dataclasses.replace(c.call, cached=True, tries=(), latency_s=0.0), c.proposal)
                for c in result.calls if not c.call.error]  # fmt: skip
    live = TaskResult(result.task, result.judged, [c for c in result.calls if not c.call.error])
    traces = [the_trace(*log(tmp_path / name, r)) for name, r in
              (("live", live), ("replayed", TaskResult(result.task, result.judged, replayed)))]  # fmt: skip
    assert shape_of(traces[0]) == shape_of(traces[1])
    cached = [[s.get_attribute("kbx.cached") for s in t.data.spans if s.span_type == "CHAT_MODEL"] for t in traces]
    assert sorted(cached[0]) == [False, False, False, True] and cached[1] == [True] * 4
