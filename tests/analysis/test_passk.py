"""pass@k and fast_p@k (analysis.passk) against values worked out by hand, and from a store kbx logged."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.passk import pass_at_k, table


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 2, 1, 2 / 5),
    (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
    (10, 3, 4, 1 - 35 / 210),  # 1 - C(7,4)/C(10,4)
    (4, 0, 2, 0.0),
    (4, 4, 2, 1.0),
    (3, 1, 3, 1.0),  # n - c < k: any 3 of the 3 hold the correct one
])  # fmt: skip
def test_the_unbiased_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_k_beyond_the_samples_is_undefined():
    assert math.isnan(pass_at_k(2, 1, 3))


def rows(method: str, samples: list[tuple[str, int, int, float]], hardware: str = "h100", rnd: int = 0) -> list[dict]:
    """(category, n, c, fast_1 count) per task run."""
    return [{"method": method, "hardware": hardware, "round": rnd, "category": cat, "task": f"{cat}/t{i}",
             "run_id": f"{method}{i}", "judged_attempts": n, "correct_attempts": c, "fast_1_attempts": f,
             "fast_1.5_attempts": f, "fast_2_attempts": 0.0} for i, (cat, n, c, f) in enumerate(samples)]  # fmt: skip


def test_per_category_and_overall_means_over_the_task_runs_with_k_samples():
    frame = pd.DataFrame(rows("best_of_n", [("A", 4, 1, 1), ("A", 4, 2, 0), ("B", 2, 0, 0)])
                         + rows("iterative", [("A", 1, 1, 1), ("B", 1, 0, 0)]))  # fmt: skip
    got = table(frame).set_index(["category", "k"])
    assert set(got["method"]) == {"best_of_n"}  # one kernel a round is no sampling
    assert got.loc[("all", 1), "pass_at_k"] == pytest.approx((1 / 4 + 2 / 4 + 0) / 3)
    assert got.loc[("all", 2), "pass_at_k"] == pytest.approx((1 - 3 / 6 + 1 - 1 / 6 + 0) / 3)
    assert got.loc[("all", 4), "tasks"] == 2 and got.loc[("all", 4), "pass_at_k"] == 1.0
    assert got.loc[("A", 2), "pass_at_k"] == pytest.approx((1 - 3 / 6 + 1 - 1 / 6) / 2)
    assert got.loc[("B", 2), "pass_at_k"] == 0.0 and ("B", 4) in got.index and got.loc[("B", 4), "tasks"] == 0
    assert got.loc[("all", 1), "fast_1_at_k"] == pytest.approx((1 / 4 + 0 + 0) / 3)
    assert got.loc[("all", 1), "fast_2_at_k"] == 0.0 and sorted(got.reset_index()["k"].unique()) == [1, 2, 4]


def test_fast_p_at_k_is_empty_where_nothing_was_timed():
    cpu = pd.DataFrame(rows("best_of_n", [("A", 3, 1, math.nan)], hardware="cpu"))
    got = table(cpu)
    assert got["pass_at_k"].notna().all() and got["fast_1_at_k"].isna().all()


def test_from_the_counts_kbx_logs_per_round(tmp_path):
    """Four samples of one task in round 0 (two correct: 3x and 0.5x, one wrong, one harness error) on an H100."""
    from analysis.load import load
    from kbx.core.hardware import load_profiles
    from kbx.core.record import EvalRecord, Status
    from kbx.methods.loop import Judged, TaskResult
    from kbx.tasks import discover
    from kbx.tracking.tracker import Tracker

    task = discover()["Math/add"]
    records = [EvalRecord(task=task.id, task_version=1, status=Status.OK, label="round0/sample0", timed=True, speedup=3.0),
               EvalRecord(task=task.id, task_version=1, status=Status.OK, label="round0/sample1", timed=True, speedup=0.5),
               EvalRecord(task=task.id, task_version=1, status=Status.MISMATCH, label="round0/sample2"),
               EvalRecord(task=task.id, task_version=1, status=Status.HARNESS_ERROR, label="round0/sample3")]  # fmt: skip
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "bon", tmp_path)
    job = tracker.start_parent("best_of_n", {"method": "best_of_n", "hardware": "h100"}, {})
    tracker.log_task(job, TaskResult(task, [Judged(0, r, "") for r in records]), "best_of_n", load_profiles()["h100"])
    frame, _ = load(uri, "bon")
    got = table(frame).set_index(["category", "k"])
    assert got.loc[("all", 1), "samples"] == 3  # the harness error is no sample
    assert got.loc[("all", 1), "pass_at_k"] == pytest.approx(2 / 3)
    assert got.loc[("all", 2), "fast_1_at_k"] == pytest.approx(1 - 1 / 3)  # 1 - C(2,2)/C(3,2)
    assert got.loc[("all", 3), "fast_2_at_k"] == 1.0 and got.loc[("all", 1), "fast_1.5_at_k"] == pytest.approx(1 / 3)
