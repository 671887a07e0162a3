"""The one loop every method runs through: propose -> evaluate -> feed back, round by round.

Each task advances through its rounds in its own thread from a pool of `parallel` threads, so
one task's LLM calls overlap other tasks' evaluation; the evaluator bounds concurrent attempts
by itself (EvalSettings.workers). Within a task, rounds are strictly sequential.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
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
    calls: list = dataclasses.field(default_factory=list)  # LLM calls (kbx.methods.llm.LoggedCall), if any

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
    return (record.correct, speed, record.compiled, record.status.judged)


def run_suite(
    method: Method,
    tasks: list[TaskInfo],
    evaluator: Evaluator,
    rounds: int,
    on_round_start: Callable[[int, int], None] | None = None,
    on_record: Callable[[EvalRecord], None] | None = None,
    parallel: int = 1,
    on_round_done: Callable[[int, float], bool] | None = None,
    on_task_done: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Run up to `rounds` rounds of `method` over `tasks`, `parallel` tasks at a time.

    Every task ends with at least one record. Callbacks are serialised (never called concurrently).
    `on_round_done(k, correct_rate)` is called once every task has finished round k, with the share
    of tasks whose best kernel so far is correct; returning True stops every task after its current
    round (how a sweep prunes a hopeless trial). The first exception from a task stops the others
    after their current round and is re-raised.
    `on_task_done(result)` is called, from the task's thread, as soon as a task has its final result
    (how a job logs each task when it completes); these calls are serialised among themselves, and a
    task cut short by another task's exception is not reported. An exception from it fails the suite.
    """
    results = {t.id: TaskResult(t) for t in tasks}
    notify = threading.Lock()
    reporting = threading.Lock()  # on_task_done may be slow (tracking); it must not hold up on_record
    stop = threading.Event()
    failed = threading.Event()  # set before `stop` when a task raised: the others are then incomplete
    calls_for = getattr(method, "calls_for", None)
    finished_round = [0] * rounds  # tasks done with each round

    def round_done(k: int) -> None:
        with notify:
            finished_round[k] += 1
            if on_round_done is None or finished_round[k] != len(tasks):
                return
            correct = sum(any(j.record.correct for j in r.judged if j.round <= k) for r in results.values())
            if on_round_done(k, correct / len(tasks)):
                stop.set()

    def record_done(_i: int, record: EvalRecord) -> None:
        with notify:
            on_record(record)  # type: ignore[misc]

    def advance(task: TaskInfo) -> None:
        result = results[task.id]
        for k in range(rounds):
            if stop.is_set():
                break
            proposals = method.propose(task, k, result.records)
            if proposals:
                attempts = [Attempt(task, p.code, f"round{k}/{p.label}") for p in proposals]
                if on_round_start:
                    with notify:
                        on_round_start(k, len(attempts))
                records = evaluator.evaluate(attempts, on_record=record_done if on_record else None)
                result.judged += [Judged(k, r, a.code) for a, r in zip(attempts, records, strict=True)]
            round_done(k)
        finish(result)
        if on_task_done is not None and not failed.is_set():
            with reporting:
                on_task_done(result)

    def finish(result: TaskResult) -> None:
        if calls_for:
            result.calls = calls_for(result.task.id)
        if not result.judged:
            missing = EvalRecord(task=result.task.id, task_version=result.task.spec.version, status=Status.NO_CODE,
                                 reason=f"method {method.name!r} produced no code for this task", label="round0/none")  # fmt: skip
            result.judged.append(Judged(0, missing, ""))

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallel))
    futures = [pool.submit(advance, t) for t in tasks]
    try:
        for future in concurrent.futures.as_completed(futures):
            future.result()
    except KeyboardInterrupt:
        failed.set()
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: the caller acts now, not after every round in flight
        raise
    except BaseException:
        failed.set()
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return list(results.values())
