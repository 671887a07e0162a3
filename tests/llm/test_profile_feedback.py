"""The P feedback (kbx.llm.profile): what kbx measured per perf shape, rendered from real H100 records of
kbx.bench (the expert kernels, and torch.compile's times from the inductor results beside them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbx.core.hardware import load_profiles
from kbx.core.record import EvalRecord, Status
from kbx.llm.profile import load_compile_times
from kbx.llm.prompt import PromptSettings, task_feedback
from kbx.tasks import discover
from kbx.tracking.tracker import record_from_dict

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "bench" / "results"
H100 = load_profiles()["h100"]
INDUCTOR = (str(RESULTS / "h100_inductor_2026-12-06_a.json"), str(RESULTS / "h100_inductor_2026-12-06_b.json"))


def h100_record(task_id: str) -> EvalRecord:
    report = json.loads((RESULTS / "h100_reference_2026-12-06.json").read_text())
    return record_from_dict(next(r for r in report["runs"][0]["records"] if r["task"] == task_id))


def test_each_perf_shape_against_eager_torch_compile_and_the_h100s_peaks():
    task = discover()["Math/add"]
    prompt = PromptSettings(compile_times=load_compile_times(INDUCTOR, H100, REPO))
    text = task_feedback(task, h100_record(task.id), "P", prompt, H100)
    lines = text.splitlines()
    assert lines[0].startswith("Evaluation: status ok; compiled True; correct True")
    assert "Per perf shape, as measured (h100: 3350 GB/s DRAM, 67 TFLOP/s for float32):" in lines
    # n2^24: 0.072896 ms against eager's 0.071856 ms and torch.compile's 0.071776 ms; 2761.8 GB/s of 3350 (82 %),
    # 0.23 TFLOP/s of 67 (0.34 %): memory-bound; its launch (0.13 ms) did not set its time
    assert ("  n2^24: 0.0729 ms; eager 0.07186 ms (speedup 0.986x); torch.compile 0.07178 ms (speedup 0.985x); "
            "2762 GB/s (82% of peak), 0.2302 TFLOP/s (0.34% of peak); memory-bound") in lines
    assert sum(line.startswith("  n2^") for line in lines) == 4 and "launch-bound" not in text
    assert lines[-1].startswith("Fix correctness if the kernel is wrong, otherwise make it faster.")


def test_a_launch_bound_shape_says_so_and_an_unknown_compile_time_too():
    task = discover()["LinearAlgebra/det"]
    record = h100_record(task.id)
    bound = [s for s in record.shapes if s.host_bound]
    assert bound, "the H100 records of the det expert have a launch-bound shape"
    text = task_feedback(task, record, "P", PromptSettings(), H100)
    line = next(x for x in text.splitlines() if x.startswith(f"  {bound[0].shape}:"))
    assert "torch.compile not known" in line
    assert line.endswith(f"launch-bound: the host's {bound[0].launch_ms:.3g} ms to launch a call set its time, not the GPU")


def test_the_cpu_has_no_profile_and_e_has_none_either():
    task = discover()["Math/add"]
    record = EvalRecord(task=task.id, task_version=1, status=Status.OK, cases_total=3, cases_passed=3,
                        timing_skipped_reason="no GPU: timing needs a CUDA device")  # fmt: skip
    cpu = load_profiles()["cpu"]
    assert "No per-shape profile: no GPU: timing needs a CUDA device." in task_feedback(task, record, "P",
                                                                                         PromptSettings(), cpu)  # fmt: skip
    assert "Per perf shape" not in task_feedback(task, h100_record(task.id), "E", PromptSettings(), H100)


def test_compile_times_of_another_gpu_are_not_used_and_a_broken_file_is_a_config_error(tmp_path):
    from kbx.core.errors import ConfigError

    assert load_compile_times(INDUCTOR, load_profiles()["h200"], REPO) == {}
    assert load_compile_times(INDUCTOR, load_profiles()["cpu"], REPO) == {}
    assert load_compile_times(INDUCTOR, H100, REPO)[("Math/add", 1)]["n2^24"] == pytest.approx(0.071776, rel=1e-4)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ConfigError, match="bad.json is not `kbx.bench eval --json` results"):
        load_compile_times((str(tmp_path / "bad.json"),), H100, REPO)


@pytest.mark.gpu
def test_launches_per_call_are_counted_per_perf_shape_on_a_gpu():
    """Math/add's expert launches one Triton kernel a call; the P feedback says so for every shape."""
    from kbx.contract.attempt import Attempt
    from kbx.driver.evaluator import EvalSettings, Evaluator

    task = discover()["Math/add"]
    with Evaluator(EvalSettings(device="cuda", workers=1)) as ev:
        (record,) = ev.evaluate([Attempt(task, Path(task.expert_path).read_text(), "expert")])
    assert record.status is Status.OK and record.shapes, record.reason
    assert [s.launches_per_call for s in record.shapes] == [1.0] * len(record.shapes)
    text = task_feedback(task, record, "P", PromptSettings(), H100)
    assert text.count("Triton launches per call: 1;") + text.count("Triton launches per call: 1\n") == len(record.shapes)
