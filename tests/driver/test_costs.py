"""Longest first (kbx.driver.costs): attempts start in the order their tasks' earlier wall times give,
the costs are learnt from the records and kept per device, and a bad costs file only loses the order."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kbx.driver.costs import AttemptCosts
from kbx.driver.evaluator import evaluate_all


@dataclasses.dataclass
class _Task:
    id: str


@dataclasses.dataclass
class _Attempt:
    task: _Task


@dataclasses.dataclass
class _Record:
    task: str
    wall_s: float


def test_unknown_tasks_start_first_then_the_longest(tmp_path):
    costs = AttemptCosts("NVIDIA H100", tmp_path / "costs.json")
    costs.seconds = {"a": 1.0, "b": 50.0, "c": 5.0}
    assert costs.order(["a", "new1", "b", "c", "new2"]) == [1, 4, 2, 3, 0]


def test_costs_are_learnt_from_the_records_and_order_the_next_run(tmp_path):
    path = tmp_path / "costs.json"
    walls = {"Math/add": 1.0, "LinearAlgebra/eig": 48.0, "Math/mul": 2.0}
    attempts = [_Attempt(_Task(t)) for t in walls]

    def run():
        started = []

        def evaluate_one(attempt):
            started.append(attempt.task.id)
            return _Record(attempt.task.id, walls[attempt.task.id])

        costs = AttemptCosts("NVIDIA H100", path, shipped=path.with_name("none.json"))
        records = evaluate_all(evaluate_one, attempts, workers=1, costs=costs)
        assert [r.task for r in records] == list(walls)  # input order whatever the start order
        return started

    assert run() == ["Math/add", "LinearAlgebra/eig", "Math/mul"]  # nothing known: the input's order
    assert run() == ["LinearAlgebra/eig", "Math/mul", "Math/add"]
    assert AttemptCosts("cpu", path).seconds == {}  # per device


def test_other_devices_costs_are_kept_and_a_malformed_file_is_only_ignored(tmp_path):
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"cpu": {"Math/add": 3.0}}))
    costs = AttemptCosts("NVIDIA H200", path)
    costs.note("Math/add", 0.5)
    costs.save()
    assert json.loads(path.read_text()) == {"cpu": {"Math/add": 3.0}, "NVIDIA H200": {"Math/add": 0.5}}
    for text in ("not json", "[1, 2]", '{"cpu": {"Math/add": "slow"}}'):
        path.write_text(text)
        assert AttemptCosts("cpu", path).seconds == {}


def test_a_fresh_machine_starts_from_the_shipped_costs_and_its_own_figures_win(tmp_path):
    """No costs of its own yet: the shipped ones for its GPU; for a GPU kbx has none for, each task's
    median over the shipped GPUs; on the CPU none. A task timed here overrides the shipped figure."""
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"NVIDIA H100": {"a": 10.0, "b": 1.0}, "NVIDIA H200": {"a": 6.0, "b": 2.0, "c": 4.0},
                                   "NVIDIA B200": {"a": 8.0}}))  # fmt: skip
    mine = tmp_path / "costs.json"
    assert AttemptCosts("NVIDIA H100", mine, shipped).order(["b", "a", "c"]) == [2, 1, 0]  # c unknown there
    assert AttemptCosts("NVIDIA A100", mine, shipped).seconds == {"a": 8.0, "b": 1.5, "c": 4.0}
    assert AttemptCosts("cpu", mine, shipped).seconds == {}
    mine.write_text(json.dumps({"NVIDIA H100": {"b": 30.0}}))
    assert AttemptCosts("NVIDIA H100", mine, shipped).order(["a", "b"]) == [1, 0]


def test_the_shipped_costs_cover_every_task_on_both_supported_gpus():
    """kbx/driver/attempt_costs.json, from `python -m kbx.bench costs` over the committed expert results."""
    from kbx.driver.costs import SHIPPED_PATH
    from kbx.tasks import discover

    shipped = json.loads(SHIPPED_PATH.read_text())
    with_experts = {t.id for t in discover().values() if t.expert_path}
    for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        assert set(shipped[gpu]) == with_experts and all(s > 0 for s in shipped[gpu].values())


def test_costs_are_the_median_wall_time_per_gpu_and_a_bad_file_is_one_error(tmp_path):
    from kbx.bench.costs import CostsError, costs_from_results

    def report(device, *walls):
        return {"device": device, "runs": [{"records": [{"task": "Math/add", "wall_s": w}]} for w in walls]}

    a, b, bad = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "bad.json"
    a.write_text(json.dumps(report("NVIDIA H100", 1.0, 3.0)))
    b.write_text(json.dumps(report("NVIDIA H100", 10.0)))
    assert costs_from_results([a, b]) == {"NVIDIA H100": {"Math/add": 3.0}}
    for text in ("[]", json.dumps(report("cpu", 1.0)), json.dumps({"device": "NVIDIA H100", "runs": [{"records": [{}]}]})):
        bad.write_text(text)
        with pytest.raises(CostsError, match="bad.json"):
            costs_from_results([bad])
