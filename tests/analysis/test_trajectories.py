"""`python -m analysis trajectories`: one line per LLM-written kernel, with its conversation, verdict and reward;
the file reads back to what was written. The reward against values worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from analysis.reward import reward
from analysis.trajectories import SCHEMA, collect, read
from kbx.core.record import Status
from tests.llm_results import CPU, FEEDBACK, SECRET, SYSTEM, trajectory


@pytest.mark.parametrize(("status", "speedup", "expected"), [
    (Status.OK, 2.0, 1 + 0.5 * (1 / 3)),  # log2(2) = 1 of the clip's 3
    (Status.OK, 0.5, 1 - 0.5 * (1 / 3)),
    (Status.OK, 1.0, 1.0),
    (Status.OK, 64.0, 1.5),  # clipped at 8x
    (Status.OK, 1 / 64, 0.5),
    (Status.OK, math.nan, 1.0),  # correct on the CPU: not timed
    (Status.MISMATCH, math.nan, 0.0),
    (Status.NO_CODE, math.nan, 0.0),
    (Status.TIMING_SUSPECT, 120.0, 0.0),
    (Status.DECOY_KERNEL, math.nan, -1.0),
    (Status.NO_TRITON, math.nan, -1.0),
    (Status.HIDDEN_WORK, 3.0, -1.0),
    (Status.INPUT_MUTATED, math.nan, -1.0),
    (Status.HARNESS_ERROR, math.nan, None),
    (Status.QUARANTINED, math.nan, None),
    (Status.REFERENCE_ERROR, math.nan, None),
])  # fmt: skip
def test_reward_gates_on_correctness_then_counts_log_speedup_and_punishes_hacks(status, speedup, expected):
    value, why = reward(status, speedup)
    assert value == (pytest.approx(expected) if expected is not None else None) and why


def logged_store(tmp_path) -> str:
    from kbx.tracking.tracker import Tracker

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "llm", tmp_path, secrets=(SECRET,))
    params = {"method": "geak", "llm_model": "openai/x", "config_hash": "abc123", "hardware": "cpu", "category": "all"}
    job = tracker.start_parent("geak | all | cpu | 2 rounds", params, {})
    tracker.log_task(job, trajectory(), "geak", CPU)
    tracker.finish_parent(job, {"correct_rate": 1.0}, {})
    return uri


def test_each_attempt_is_a_line_with_its_conversation_kernel_verdict_and_reward(tmp_path, capsys):
    from analysis.__main__ import main

    logged_store(tmp_path)
    out = tmp_path / "trajectories.jsonl"
    assert main(["trajectories", str(tmp_path), "--experiment", "llm", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["lines"] == 3 and summary["scored"] == 2 and summary["attempts_without_their_llm_call"] == 0
    lines = read(out)
    assert [(t.label, t.role, t.sample) for t in lines] == [("round0/cand0", "generator", 0), ("round1/cand0", "generator", 0),
                                                             ("round1/cand1", "generator", 1)]  # fmt: skip
    first, fixed, broken = lines
    assert (fixed.method, fixed.model, fixed.config_hash, fixed.task, fixed.round) == ("geak", "openai/x", "abc123", "Math/add", 1)
    assert fixed.messages[0] == SYSTEM and [m["role"] for m in fixed.messages] == ["system", "user", "assistant", "user",
                                                                                   "assistant"]  # fmt: skip
    assert fixed.messages[3]["content"] == FEEDBACK and fixed.messages[-1]["content"] == "```python\nb = 2\n```"
    assert fixed.kernel == "b = 2" and fixed.verdict["status"] == "ok" and fixed.verdict["speedup"] == 2.0
    assert fixed.reward == pytest.approx(1 + 0.5 / 3) and fixed.scored
    assert first.reward == 0.0 and first.verdict["reason"] == "case 0: 3 of 8 differ"
    assert broken.reward is None and not broken.scored and "harness_error" in broken.reward_reason
    assert SECRET not in out.read_text() and "[redacted]" in first.messages[1]["content"]
    assert all(t.schema == SCHEMA and t.experiment == "llm" for t in lines)


def test_the_file_reads_back_to_what_was_collected(tmp_path):
    from analysis.trajectories import write

    uri = logged_store(tmp_path)
    lines, _, runs = collect(uri, "llm")
    assert runs == 1 and len(lines) == 3
    write(lines, tmp_path / "t.jsonl")
    assert read(tmp_path / "t.jsonl") == lines
    text = (tmp_path / "t.jsonl").read_text().replace('"schema": "kbx.trajectory/1"', '"schema": "other"', 1)
    (tmp_path / "other.jsonl").write_text(text)
    with pytest.raises(Exception, match="other.jsonl:1: not a kbx.trajectory/1 line"):
        read(tmp_path / "other.jsonl")


def test_an_unknown_experiment_is_one_line_and_exit_2(tmp_path, capsys):
    from analysis.__main__ import main

    logged_store(tmp_path)
    capsys.readouterr()
    assert main(["trajectories", str(tmp_path), "--experiment", "nope", "--out", str(tmp_path / "t.jsonl")]) == 2
    assert capsys.readouterr().err.strip() == f"analysis: no finished task runs of experiment 'nope' in {tmp_path}"
    assert not (tmp_path / "t.jsonl").exists()
