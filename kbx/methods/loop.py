"""The one loop every method runs through: propose -> evaluate -> feed back, round by round.

Proposing and judging are two stages that run side by side. `parallel` threads make proposals
(for LLM methods, more than `llm.concurrency`, so every LLM slot stays busy); as soon as a proposal
is made, its thread queues the attempts for judging and takes up the next task that is ready to
propose, so a slow verdict never holds an LLM slot idle. `judging` threads (the evaluator's
workers) take the queued tasks in order; a task is handed to the evaluator only when a worker can
take it up, so a driver that dies blames only the tasks really being judged (kbx.driver.inflight). Within
a task, rounds are strictly sequential.

Tasks ready to propose are taken fewest-rounds-done first (then in suite order): the task with the
most work left goes first, so once the LLM has nothing left to start, what remains is at most one
round per task, not the whole chain of a task started last.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import heapq
import threading
import time
from collections.abc import Callable

from kbx.contract.attempt import Attempt, Evaluates
from kbx.core import provenance
from kbx.core.record import EvalRecord, Status
from kbx.methods.base import Method, Proposal
from kbx.tasks.spec import TaskInfo


@dataclasses.dataclass(frozen=True)
class Judged:
    """One attempt with its round and its source code, and when its judging started (seconds since the
    epoch; 0 for a result read back from an earlier run), for its span in a trace (kbx.tracking.traces)."""

    round: int
    record: EvalRecord
    code: str
    started_s: float = 0.0


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


PROPOSERS_PER_LLM_SLOT = 2


def proposers(eval_workers: int, llm_concurrency: int | None) -> int:
    """Threads making proposals at once. For an LLM method, PROPOSERS_PER_LLM_SLOT per slot of
    `llm.concurrency` (the client admits no more calls than slots): a proposal whose call waits to
    retry after a rate limit holds no slot, and another task's call takes it up. Otherwise the
    evaluator's workers."""
    return max(1, PROPOSERS_PER_LLM_SLOT * llm_concurrency if llm_concurrency else eval_workers)


def run_suite(
    method: Method,
    tasks: list[TaskInfo],
    evaluator: Evaluates,
    rounds: int,
    on_round_start: Callable[[int, int], None] | None = None,
    on_record: Callable[[EvalRecord], None] | None = None,
    parallel: int = 1,
    on_round_done: Callable[[int, float], bool] | None = None,
    on_task_done: Callable[[TaskResult], None] | None = None,
    halt: Callable[[], str] | None = None,
    judging: int = 0,
) -> list[TaskResult]:
    """Run up to `rounds` rounds of `method` over `tasks`, with `parallel` proposals made at once
    and `judging` tasks (0: `parallel`) handed to the evaluator at once.

    Every task ends with at least one record. Callbacks are serialised (never called concurrently).
    `on_round_done(k, correct_rate)` is called once every task has finished round k, with the share
    of tasks whose best kernel so far is correct; returning True stops every task after its current
    round (how a sweep prunes a hopeless trial). `halt()` is asked before each proposal; a non-empty
    answer (why: a job budget was reached) starts no more proposals, lets the ones made be judged,
    and is the reason on the record of a task that never got a proposal. The first exception from
    a task stops the others after their current round and is re-raised.
    `on_task_done(result)` is called as soon as a task has its final result (how a job logs each task
    when it completes); these calls are serialised among themselves, and a task cut short by another
    task's exception is not reported. An exception from it fails the suite.
    """
    return _Suite(method, tasks, evaluator, rounds, on_round_start, on_record, on_round_done, on_task_done,
                  halt).run(parallel, judging or parallel)  # fmt: skip


class _Suite:
    """The state of one run_suite call: the queue of tasks ready to propose and the callbacks."""

    def __init__(self, method, tasks, evaluator, rounds, on_round_start, on_record, on_round_done, on_task_done,
                 halt) -> None:  # fmt: skip
        self.method, self.tasks, self.evaluator = method, tasks, evaluator
        self.rounds = min(rounds, getattr(method, "max_rounds", rounds))  # a one-round method's task ends at once
        self.on_round_start, self.on_record, self.on_round_done, self.on_task_done = (on_round_start, on_record,
                                                                                      on_round_done, on_task_done)  # fmt: skip
        self.halt = halt or (lambda: "")
        self.results = {t.id: TaskResult(t) for t in tasks}
        self.order = {t.id: i for i, t in enumerate(tasks)}
        self.ready = [(0, self.order[t.id], t.id) for t in tasks]  # heap of (round, suite order, task id)
        heapq.heapify(self.ready)
        self.unfinished = len(tasks)
        self.changed = threading.Condition()  # guards ready, unfinished and error
        self.notify = threading.Lock()
        self.reporting = threading.Lock()  # on_task_done may be slow (tracking); it must not hold up on_record
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.calls_for = getattr(method, "calls_for", None)
        self.finished_round = [0] * rounds  # tasks done with each round

    def run(self, parallel: int, judging: int) -> list[TaskResult]:
        self.judging = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, judging),
                                                             thread_name_prefix="kbx-judge")  # fmt: skip
        threads = [threading.Thread(target=self.guarded, args=(self.propose_loop,), name=f"kbx-propose-{i}",
                                    daemon=True) for i in range(max(1, parallel))]  # fmt: skip
        for t in threads:
            t.start()
        try:
            with self.changed:
                self.changed.wait_for(lambda: self.unfinished == 0 or self.error is not None)
        except KeyboardInterrupt as interrupt:  # Ctrl-C: the caller acts now, not after every round in flight
            with self.changed:
                self.error = self.error or interrupt
                self.stop.set()
                self.changed.notify_all()
            self.judging.shutdown(wait=False, cancel_futures=True)
            raise
        for t in threads:
            t.join()
        self.judging.shutdown(wait=True, cancel_futures=self.error is not None)  # queued, not begun: dropped
        if self.error is not None:
            raise self.error
        return list(self.results.values())

    def guarded(self, work: Callable, *args) -> None:
        """Run one piece of work; its exception stops the suite (the first one is re-raised)."""
        try:
            work(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of run_suite
            with self.changed:
                if self.error is None:
                    self.error = exc
                self.stop.set()
                self.changed.notify_all()

    def propose_loop(self) -> None:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: self.ready or self.unfinished == 0 or self.error is not None)
                if not self.ready or self.error is not None:
                    return
                k, _, task_id = heapq.heappop(self.ready)
            self.propose(self.results[task_id], k)

    def propose(self, result: TaskResult, k: int) -> None:
        reason = self.halt()
        if self.stop.is_set() or reason:
            return self.finish(result, reason)
        proposals = self.method.propose(result.task, k, result.records)
        if not proposals:
            return self.next_round(result, k)
        if self.on_round_start:
            with self.notify:
                self.on_round_start(k, len(proposals))
        self.judging.submit(self.guarded, self.judge, result, k, proposals)

    def judge(self, result: TaskResult, k: int, proposals: list[Proposal]) -> None:
        """Judge the whole proposals; a cut-off one (kbx.methods.base.Proposal) is recorded `truncated` unjudged."""
        task = result.task
        attempts = [Attempt(task, p.code, f"round{k}/{p.label}", p.expert) for p in proposals if not p.cut_off]
        landed: dict[int, float] = {}  # attempt index -> when its record came back

        def on_record(i: int, record: EvalRecord) -> None:
            landed[i] = time.time()
            if self.on_record:
                self.record_done(i, record)

        records = enumerate(self.evaluator.evaluate(attempts, on_record=on_record) if attempts else [])
        ended = time.time()
        for p in proposals:
            if p.cut_off:
                record = EvalRecord(task=task.id, task_version=task.spec.version, status=Status.TRUNCATED,
                                    reason=p.cut_off, label=f"round{k}/{p.label}", **provenance.collect(None))  # fmt: skip
                on_record(-1, record)
                result.judged.append(Judged(k, record, p.code, ended))
            else:
                i, record = next(records)
                result.judged.append(Judged(k, record, p.code, landed.get(i, ended) - record.wall_s))
        self.next_round(result, k)

    def next_round(self, result: TaskResult, k: int) -> None:
        self.round_done(k)
        if k + 1 >= self.rounds or self.stop.is_set():
            return self.finish(result, "")
        with self.changed:
            heapq.heappush(self.ready, (k + 1, self.order[result.task.id], result.task.id))
            self.changed.notify_all()  # the driver waits on it too: notify() could wake only the driver

    def round_done(self, k: int) -> None:
        with self.notify:
            self.finished_round[k] += 1
            if self.on_round_done is None or self.finished_round[k] != len(self.tasks):
                return
            correct = sum(any(j.record.correct for j in r.judged if j.round <= k) for r in self.results.values())
            if self.on_round_done(k, correct / len(self.tasks)):
                self.stop.set()

    def record_done(self, _i: int, record: EvalRecord) -> None:
        with self.notify:
            self.on_record(record)  # type: ignore[misc]

    def finish(self, result: TaskResult, reason: str) -> None:
        if self.calls_for:
            result.calls = self.calls_for(result.task.id)
        if not result.judged:
            result.judged.append(Judged(0, self.nothing_judged(result, reason), ""))
        try:
            if self.on_task_done is not None and self.error is None:
                with self.reporting:
                    self.on_task_done(result)
        finally:
            with self.changed:
                self.unfinished -= 1
                self.changed.notify_all()

    def nothing_judged(self, result: TaskResult, reason: str) -> EvalRecord:
        """The record of a task that got no proposal: `llm_error` when LLM calls failed (kbx's side: none
        gave an answer to judge), else `no_code` (the method wrote nothing, or `reason`: a job budget)."""
        failed = [c.call.error for c in result.calls if c.call.error]
        status, why = Status.NO_CODE, reason or f"method {self.method.name!r} produced no code for this task"
        if failed and not reason:
            status = Status.LLM_ERROR
            why = f"no answer from the LLM: {failed[-1]} ({len(failed)} of {len(result.calls)} calls failed)"
        return EvalRecord(task=result.task.id, task_version=result.task.spec.version, status=status, reason=why,
                          label="round0/none", **provenance.collect(None))  # fmt: skip
