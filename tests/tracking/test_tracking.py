"""MLflow logging of task results, including the GPU-only fields (timing, telemetry, roofline),
exercised with a synthetic timed record so it runs without a GPU."""

from __future__ import annotations

import math

import mlflow
import pytest

from kbx.core.hardware import load_profiles
from kbx.core.record import EvalRecord, ShapeTiming, Status
from kbx.core.roofline import COMPUTE_BOUND, MEMORY_BOUND, classify
from kbx.methods.loop import Judged, TaskResult
from kbx.tasks import discover
from kbx.tracking.tracker import Tracker

H100 = load_profiles()["h100"]


def shape(name: str, ms: float, tflops: float, gbps: float, **telemetry) -> ShapeTiming:
    return ShapeTiming(shape=name, kernel_ms_median=ms, kernel_ms_iqr=0.01, baseline_ms_median=2 * ms,
                       baseline_ms_iqr=0.01, reps=50, speedup=2.0, tflops=tflops, gbps=gbps, first_call_ms=300.0,
                       **telemetry)  # fmt: skip


def test_roofline_classes_against_the_ridge_point():
    # H100 fp32 ridge: 67e12 / 3350e9 = 20 FLOP/byte
    memory = classify(shape("a", 1.0, tflops=0.3, gbps=3000), H100, ["float32"])
    assert memory["roofline"] == MEMORY_BOUND and memory["bw_util"] == pytest.approx(3000 / 3350)
    compute = classify(shape("b", 1.0, tflops=50, gbps=100), H100, ["float32"])
    assert compute["roofline"] == COMPUTE_BOUND and compute["compute_util"] == pytest.approx(50 / 67)
    half = classify(shape("c", 1.0, tflops=500, gbps=100), H100, ["float16"])
    assert half["compute_util"] == pytest.approx(500 / 989.4)


def test_task_run_logs_rounds_timing_and_telemetry(tmp_path):
    task = discover()["Math/add"]
    failing = EvalRecord(task=task.id, task_version=1, status=Status.MISMATCH, label="round0/a")
    timed = EvalRecord(
        task=task.id, task_version=1, status=Status.OK, label="round1/a", timed=True, speedup=2.0,
        runtime_ms=3.0, baseline_ms=6.0,
        shapes=(shape("small", 1.0, 0.1, 1000, telemetry="read on the largest perf shape only"),
                shape("large", 2.0, 0.2, 3000, power_w=500.0, energy_per_call_mj=1.5, sm_clock_mhz=1980.0,
                      mem_clock_mhz=2619.0, temperature_c=50.0, throttle_reasons=0.0, memory_used_mb=1000.0,
                      launch_ms=0.05)),
    )  # fmt: skip
    result = TaskResult(task, [Judged(0, failing, "a = 1"), Judged(1, timed, "b = 2")])
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "t", tmp_path)
    parent = tracker.start_parent("job", {"method": "m"}, {})
    run_id = tracker.log_task(parent, result, "m", H100)
    client = mlflow.tracking.MlflowClient(uri)
    run = client.get_run(run_id)
    assert [m.value for m in client.get_metric_history(run_id, "correct")] == [0.0, 1.0]
    assert [m.value for m in client.get_metric_history(run_id, "speedup")] == [2.0]
    assert run.data.metrics["gpu/power_w"] == 500.0 and run.data.metrics["gpu/energy_per_call_mj"] == 1.5
    assert run.data.metrics["gpu/memory_used_mb"] == 1000.0 and run.data.tags["kbx.gpu_throttle"] == "none"
    assert run.data.metrics["bw_util"] == pytest.approx(3000 / 3350)
    assert run.data.tags["kbx.roofline"] == MEMORY_BOUND and run.data.tags["kbx.status"] == "ok"
    assert "kbx.telemetry" not in run.data.tags
    assert run.data.tags["kbx.host_bound"] == "false" and run.data.metrics["launch_ms"] == 0.05
    assert sorted(a.path for a in client.list_artifacts(run_id, "attempts")) == [
        "attempts/round0__a.json", "attempts/round0__a.py", "attempts/round1__a.json", "attempts/round1__a.py"]
    assert not math.isnan(run.data.metrics["first_call_ms"])


def test_throttle_bitmask_reads_as_words():
    from kbx.core.telemetry import throttle_names

    assert throttle_names(0) == "none"
    assert throttle_names(0x4 | 0x40) == "sw_power_cap,hw_thermal_slowdown"
    assert throttle_names(0x8 | 0x1000) == "hw_slowdown,other_0x1000"


def test_plain_metric_names_are_what_the_method_ships_and_round_names_each_rounds_own(tmp_path):
    """A correct round-0 kernel followed by a wrong round-1 attempt: `correct` stays 1 (it is what the
    method ships), `round_correct` shows the round-1 attempt's 0."""
    task = discover()["Activation/gelu"]
    fast = EvalRecord(task=task.id, task_version=1, status=Status.OK, label="round0/a", timed=True, speedup=2.0,
                      runtime_ms=1.0, baseline_ms=2.0)  # fmt: skip
    wrong = EvalRecord(task=task.id, task_version=1, status=Status.MISMATCH, label="round1/a")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "t", tmp_path)
    result = TaskResult(task, [Judged(0, fast, "a"), Judged(1, wrong, "b")])
    run_id = tracker.log_task(tracker.start_parent("job", {}, {}), result, "m", H100)
    client = mlflow.tracking.MlflowClient(uri)

    def series(name: str) -> list[tuple[int, float]]:
        return sorted((m.step, m.value) for m in client.get_metric_history(run_id, name))

    assert series("correct") == [(0, 1.0), (1, 1.0)] and series("compiled") == [(0, 1.0), (1, 1.0)]
    assert series("speedup") == [(0, 2.0), (1, 2.0)]
    assert series("round_correct") == [(0, 1.0), (1, 0.0)] and series("round_speedup") == [(0, 2.0)]
    assert not any(k.startswith("best_") for k in client.get_run(run_id).data.metrics)


def test_jobs_and_task_runs_are_apart_and_linked_for_the_ui(tmp_path):
    """Job runs in the named experiment, task runs in `<name>-tasks`; the job's description links to a
    view of its task runs; both experiments are model development; headline metrics share a prefix."""
    import json

    task = discover()["Math/add"]
    ok = EvalRecord(task=task.id, task_version=1, status=Status.OK, label="round0/a")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "t", tmp_path)
    parent = tracker.start_parent("m | all | h100 | 1 round", {"n_tasks": 1}, {})
    child = tracker.log_task(parent, TaskResult(task, [Judged(0, ok, "a")]), "m", H100)
    tracker.finish_parent(parent, {"correct_rate": 1.0, "geomean_speedup": math.nan}, {}, extra={"llm_calls": 3.0})
    client = mlflow.tracking.MlflowClient(uri)
    jobs, tasks = client.get_experiment_by_name("t"), client.get_experiment_by_name("t-tasks")
    assert client.get_run(child).info.experiment_id == tasks.experiment_id
    assert client.get_run(parent).info.experiment_id == jobs.experiment_id
    assert client.get_run(parent).data.metrics == {"suite/correct_rate": 1.0, "llm_calls": 3.0}
    for experiment in (jobs, tasks):
        assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    view = json.loads(jobs.tags["mlflow.sharedViewState.kbx"])
    assert "metrics.`suite/correct_rate`" in view["selectedColumns"]
    note = client.get_run(parent).data.tags["mlflow.note.content"]
    assert f"#/experiments/{tasks.experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={parent})" in note
    job_view = json.loads(tasks.tags[f"mlflow.sharedViewState.{parent}"])
    found = client.search_runs([tasks.experiment_id], filter_string=job_view["searchFilter"])
    assert [r.info.run_id for r in found] == [child]
    assert tracker.jobs_url() == (f"http://127.0.0.1:5000/#/experiments/{jobs.experiment_id}/runs"
                                  "?workflowType=machine_learning&viewStateShareKey=kbx")  # fmt: skip


def test_make_ui_prints_the_link_to_the_jobs_or_says_there_are_none(tmp_path):
    from kbx.ui import jobs_link

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "t", tmp_path)
    assert jobs_link(uri, "t", 5001) == (f"kbx jobs of 't', side by side: http://127.0.0.1:5001/#/experiments/"
                                         f"{tracker.experiment_id}/runs?workflowType=machine_learning&viewStateShareKey=kbx")  # fmt: skip
    assert jobs_link(uri, "other", 5001) == (f"kbx: no experiment named 'other' in {uri} yet; the UI lists what "
                                             "there is: http://127.0.0.1:5001")  # fmt: skip


def test_a_new_sqlite_store_appears_whole_and_leftovers_of_a_killed_creation_go(tmp_path):
    """MLflow's table creation happens beside the store and is renamed into place: a driver killed
    during it leaves only a `.creating-` file, which the next creation removes."""
    from kbx.tracking.sqlite_store import CREATING_SUFFIX
    from kbx.tracking.tracker import may_hold_runs

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    leftover = tmp_path / f"mlflow.db{CREATING_SUFFIX}12345"
    leftover.write_bytes(b"SQLite format 3\x00 cut short")
    assert not may_hold_runs(uri, tmp_path)
    tracker = Tracker(uri, "t", tmp_path)
    assert may_hold_runs(uri, tmp_path) and not leftover.exists()
    assert not list(tmp_path.glob(f"*{CREATING_SUFFIX}*"))
    assert tracker.client.get_experiment(tracker.experiment_id).name == "t"
