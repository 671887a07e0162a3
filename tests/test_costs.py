"""Longest first (kbx.driver.costs): attempts start in the order their tasks' earlier wall times give,
the costs are learnt from the records and kept per device, and a bad costs file only loses the order."""

from __future__ import annotations

import dataclasses
import json

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

        records = evaluate_all(evaluate_one, attempts, workers=1, costs=AttemptCosts("NVIDIA H100", path))
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
