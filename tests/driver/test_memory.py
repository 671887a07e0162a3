"""Memory admission's data (kbx.driver.memory): each task's measured peak per GPU model, and what an
attempt reserves from it. The scheduler's use of it is in test_scheduler; the measurement itself
runs on a GPU (test_memory_gpu below)."""

from __future__ import annotations

import json

import pytest

from kbx.driver.memory import PEAKS_PATH, SIDES, PeakTable, TaskPeak, load_peaks, save_peaks
from kbx.tasks import discover

GIB = 1 << 30


def test_an_attempt_reserves_its_context_and_both_sides_peak_at_the_measured_version():
    table = PeakTable(context_bytes=GIB // 2, tasks={"Math/add": TaskPeak(version=2, peak_bytes=3 * GIB, case="big")})
    assert table.need_bytes("Math/add", 2) == GIB // 2 + SIDES * 3 * GIB
    assert table.need_bytes("Math/add", 3) == GIB // 2  # measured at another version: not known
    assert table.need_bytes("Math/sub", 1) == GIB // 2 and not table.known("Math/sub", 1)


def test_saving_merges_models_and_tasks_and_loads_back(tmp_path):
    path = tmp_path / "peaks.json"
    save_peaks("GPU A", PeakTable(100, {"x/a": TaskPeak(1, 10, "c1")}), path)
    save_peaks("GPU B", PeakTable(200, {"x/a": TaskPeak(1, 99, "c2")}), path)
    save_peaks("GPU A", PeakTable(150, {"x/b": TaskPeak(4, 20, "c3")}), path)
    a = load_peaks("GPU A", path)
    assert a.context_bytes == 150 and a.tasks == {"x/a": TaskPeak(1, 10, "c1"), "x/b": TaskPeak(4, 20, "c3")}
    assert load_peaks("GPU B", path).tasks["x/a"].peak_bytes == 99 and load_peaks("GPU B", path).measured_on == "GPU B"
    assert load_peaks("GPU A", tmp_path / "none.json") == PeakTable()
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_gpu_model_never_measured_borrows_another_models_peaks(tmp_path):
    """A task's tensors take the same bytes on any card, library workspaces aside: the H200's table admits an H100."""
    path = tmp_path / "peaks.json"
    save_peaks("NVIDIA H200", PeakTable(100, {"x/a": TaskPeak(1, 10, "c1")}), path)
    borrowed = load_peaks("NVIDIA H100 80GB HBM3", path)
    assert borrowed.measured_on == "NVIDIA H200" and borrowed.need_bytes("x/a", 1) == 100 + SIDES * 10


def test_the_committed_table_names_real_tasks_and_cases():
    """Each GPU model's peaks (measured by `python -m kbx.quality memory`) belong to tasks and cases that exist;
    one measured at an older version only stops counting (the context alone is reserved)."""
    tasks = discover()
    models = json.loads(PEAKS_PATH.read_text())
    assert models, "no GPU model measured"
    for name in models:
        table = load_peaks(name)
        assert table.context_bytes > 0, name
        for task_id, peak in table.tasks.items():
            assert task_id in tasks, (name, task_id)
            assert peak.case in {c.name for c in tasks[task_id].all_cases()} or not table.known(
                task_id, tasks[task_id].spec.version), (name, task_id, peak.case)


@pytest.mark.gpu
def test_memory_gpu():
    """The measurement on this GPU: Math/add's largest perf shape (2^27 fp32 elements) needs its two
    inputs and its output, 1.5 GiB, and (with input generation's temporaries) less than twice that."""
    import torch

    from kbx.driver.memory import measure_task_peak

    peak = measure_task_peak(discover()["Math/add"], "cuda")
    assert peak.case == "n2^27"
    assert 3 * 2**27 * 4 <= peak.peak_bytes < 2 * 3 * 2**27 * 4
    assert torch.cuda.memory_allocated() < 2**20  # nothing of it is kept
