"""The one loop every method runs through: propose -> evaluate -> feed back, round by round."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kbx.eval.evaluator import Attempt, Evaluator
from kbx.eval.record import EvalRecord, Status
from kbx.methods.base import Method
from kbx.tasks.spec import TaskInfo


@dataclasses.dataclass(frozen=True)
class Judged:
    """One attempt with its round and its source code."""

    round: int
    record: EvalRecord
    code: str


@dataclasses.dataclass
class TaskResult:
    """Everything judged for one task, in the order it was judged."""

    task: TaskInfo
    judged: list[Judged] = dataclasses.field(default_factory=list)

    @property
    def records(self) -> list[EvalRecord]:
        return [j.record for j in self.judged]

    def rounds(self) -> list[int]:
        return sorted({j.round for j in self.judged})

    def best(self, until: int | None = None, only: int | None = None) -> EvalRecord:
        """What the method ships: fastest correct, else first correct, else compiled, else first.

        `until` limits to rounds <= until (best so far); `only` to one round.
        """
        pool = [j.record for j in self.judged if (until is None or j.round <= until) and (only is None or j.round == only)]
        return max(pool, key=rank)


def rank(record: EvalRecord) -> tuple:
    speed = record.speedup if record.timed and record.speedup == record.speedup else 0.0
    return (record.correct, speed, record.compiled)


def run_suite(
    method: Method,
    tasks: list[TaskInfo],
    evaluator: Evaluator,
    rounds: int,
    on_round_start: Callable[[int, int], None] | None = None,
    on_record: Callable[[EvalRecord], None] | None = None,
) -> list[TaskResult]:
    """Run up to `rounds` rounds of `method` over `tasks`; every task ends with at least one record."""
    results = {t.id: TaskResult(t) for t in tasks}
    for k in range(rounds):
        attempts = []
        for task in tasks:
            history = results[task.id].records
            attempts += [Attempt(task, p.code, f"round{k}/{p.label}") for p in method.propose(task, k, history)]
        if not attempts:
            continue
        if on_round_start:
            on_round_start(k, len(attempts))
        records = evaluator.evaluate(attempts, on_record=(lambda i, r: on_record(r)) if on_record else None)
        for attempt, record in zip(attempts, records, strict=True):
            results[attempt.task.id].judged.append(Judged(k, record, attempt.code))
    for result in results.values():
        if not result.judged:
            missing = EvalRecord(task=result.task.id, task_version=result.task.spec.version, status=Status.NO_CODE,
                                 reason=f"method {method.name!r} produced no code for this task", label="round0/none")  # fmt: skip
            result.judged.append(Judged(0, missing, ""))
    return list(results.values())
