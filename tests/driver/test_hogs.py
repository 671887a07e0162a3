"""Finding the attempt whose GPU work keeps running while every candidate is stopped (kbx.driver.hogs), on
the CPU: the hunt fed NVML-shaped samples, process trees and a fake GPU that goes quiet once the hog's
work is gone; an attempt's verdict once kbx ended it; and, through a real evaluator, that the driver learns
a candidate's own threads and process tree (the evidence and the pids the hunt matches)."""

from __future__ import annotations

import dataclasses
import time
import types
from pathlib import Path

import pytest

from kbx.contract.attempt import Attempt
from kbx.core.record import Status
from kbx.core.telemetry import ProcessSample
from kbx.driver import hogs
from kbx.driver.attempt import MAX_HARNESS_RETRIES
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.tasks import discover
from tests.conftest import FIXTURE_TASKS

NOW_US = 1_000_000_000.0
SINCE_US = NOW_US - 1e6  # the hunt reads samples from the last part of the quiet wait
TIMER, JUDGE = 90, 91  # trusted processes (the timer ran its probes during the wait)


def suspect(job: str, *pids: int, threads: tuple[str, ...] = (), idle: bool = False) -> hogs.Suspect:
    return hogs.Suspect(job, pids, hogs.WorkerState(threads, idle))


def sample(pid: int, sm: float = 60.0, at_us: float = NOW_US) -> ProcessSample:
    return ProcessSample(pid, at_us, sm, 10.0 if sm else 0.0)


@dataclasses.dataclass
class FakeGpu:
    """Busy while any of `hogs_of` is alive, or for the first `draining` quiet checks (a long call ending)."""

    hogs_of: set[str]
    draining: int = 0
    teardown: int = 0  # quiet checks a hog's context still runs after its process was ended
    ended: list[str] = dataclasses.field(default_factory=list)
    checks: int = 0
    since_end: int = 0

    def seams(self) -> hogs.Seams:
        def end(eviction: hogs.Eviction) -> None:
            self.ended.append(eviction.job)
            self.since_end = 0

        def quiet() -> bool:
            self.checks += 1
            self.since_end += 1
            torn_down = self.since_end > self.teardown
            return self.checks > self.draining and torn_down and not (self.hogs_of - set(self.ended))

        return hogs.Seams(end, quiet)


SUSPECTS = [suspect("a", 10), suspect("hog", 20, threads=("Thread-1 (_busy)",)), suspect("c", 30, 31)]


def test_nvml_names_the_hog_and_only_it_is_ended_and_charged():
    gpu = FakeGpu({"hog"})
    samples = [sample(10, sm=0.0), sample(20), sample(TIMER, sm=3.0), sample(30, sm=80.0, at_us=SINCE_US - 1)]
    evictions, quiet = hogs.hunt(SUSPECTS, samples, SINCE_US, {TIMER, JUDGE}, gpu.seams())
    assert quiet and gpu.ended == ["hog"]  # c's sample is from before the settle: its call had drained
    (eviction,) = evictions
    assert eviction.charged and eviction.decided.is_set()
    assert "NVML named its process" in eviction.reason and "Thread-1 (_busy)" in eviction.reason


@pytest.mark.parametrize("samples", [[sample(20)], []], ids=["named by NVML", "by elimination"])
def test_a_context_slow_to_go_after_its_process_ended_is_waited_for_not_taken_for_innocence(samples):
    gpu = FakeGpu({"hog"}, teardown=1)  # still running at the first quiet wait after its process ended
    evictions, quiet = hogs.hunt(SUSPECTS, samples, SINCE_US, {TIMER}, gpu.seams())
    assert quiet and gpu.ended == ["hog"] and evictions[0].charged


@pytest.mark.parametrize("who, why", [(suspect("c", 30, 31), "a process it started (pid 31)"),
                                      (suspect("c", 30, idle=True), "every call it made had been synchronised")])
def test_a_child_process_or_an_idle_worker_is_evidence_too(who, why):
    gpu = FakeGpu({"c"})
    busy_pid = 31 if len(who.pids) > 1 else 30
    evictions, quiet = hogs.hunt([suspect("a", 10), who], [sample(busy_pid)], SINCE_US, {TIMER}, gpu.seams())
    assert quiet and gpu.ended == ["c"] and evictions[0].charged and why in evictions[0].reason


def test_a_call_in_progress_gets_another_wait_and_is_never_charged():
    """No thread, no child, mid-call: perhaps a long honest call. It is given a second quiet wait; if it
    drains then, nobody is ended; if not, it is ended and redone, never charged."""
    ending = FakeGpu(set(), draining=0)
    assert hogs.hunt(SUSPECTS, [sample(10)], SINCE_US, {TIMER}, ending.seams()) == ([], True)
    assert ending.ended == []
    stuck = FakeGpu({"a"})
    (eviction,), quiet = hogs.hunt(SUSPECTS, [sample(10)], SINCE_US, {TIMER}, stuck.seams())
    assert quiet and stuck.ended == ["a"] and not eviction.charged
    assert eviction.reason.endswith("redone, never charged")


def test_work_of_a_process_outside_kbx_ends_no_attempt():
    """NVML's pids are kbx's (the timer's probes show), and the busy one is none of the attempts': the GPU is
    another's, and the window is redone as before."""
    gpu = FakeGpu({"outside"})
    assert hogs.hunt(SUSPECTS, [sample(TIMER, sm=2.0), sample(4242)], SINCE_US, {TIMER}, gpu.seams()) == ([], False)
    assert gpu.ended == []


@pytest.mark.parametrize("samples", [[], [sample(700_020), sample(700_090)]], ids=["no NVML", "host pids"])
def test_without_nvmls_word_attempts_are_ended_one_at_a_time_evidence_first(samples):
    gpu = FakeGpu({"hog"})
    suspects = [suspect("a", 10), suspect("b", 11), suspect("hog", 20, threads=("Thread-1",)), suspect("d", 12)]
    evictions, quiet = hogs.hunt(suspects, samples, SINCE_US, {TIMER}, gpu.seams())
    assert quiet and gpu.ended == ["hog"] and evictions[0].charged  # the one with evidence went first
    gpu = FakeGpu({"b"})
    evictions, quiet = hogs.hunt(suspects, samples, SINCE_US, {TIMER}, gpu.seams())
    assert quiet and gpu.ended == ["hog", "d", "b"]  # then the latest started first
    assert [e.charged for e in evictions] == [False, False, False]  # b had no evidence: redone too
    assert all(e.decided.is_set() and "redone" in e.reason for e in evictions)


def test_elimination_that_never_quiets_the_gpu_redoes_everyone_it_ended():
    gpu = FakeGpu({"elsewhere"})
    evictions, quiet = hogs.hunt(SUSPECTS, [], SINCE_US, {TIMER}, gpu.seams())
    assert not quiet and gpu.ended == ["hog", "c", "a"]
    assert not any(e.charged for e in evictions) and all(e.decided.is_set() for e in evictions)


# --- what an attempt does once kbx has ended it -------------------------------------------------


def _attempt(evictions: dict, tries: list) -> object:
    """An AttemptRun with its execute loop alone: each try pops the next outcome (a record or an exception)."""
    from kbx.driver.attempt import AttemptRun

    run = AttemptRun.__new__(AttemptRun)
    run.ev = types.SimpleNamespace(evictions=evictions, settings=types.SimpleNamespace(on_gpu=True))
    run.retries, run.failures, run.started, run.redone_s, run.alone = 0, [], time.perf_counter(), 0.0, False

    def new_try() -> None:  # what AttemptRun._new_try resets that the execute loop reads
        run.job_id, run.borrowed = f"job{len(tries)}", ""

    def next_try():
        outcome = tries.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    run._new_try, run._try = new_try, next_try
    run._record = lambda status, checked, reason="", **fields: record(status, reason)
    return run


def record(status: Status, reason: str = "") -> types.SimpleNamespace:
    return types.SimpleNamespace(status=status, reason=reason)


def test_an_attempt_ended_as_the_hog_is_charged_hidden_work_whatever_its_try_said():
    from kbx.driver.attempt import _Ended

    hog = hogs.Eviction("job2")
    hog.decide(True, hogs.charge("it runs threads of its own (t)", "NVML named its process"))
    run = _attempt({"job2": hog}, [_Ended(), record(Status.OK)])
    assert run.execute() == record(Status.HIDDEN_WORK, hog.reason)


def test_an_attempt_ended_without_proof_is_redone_and_its_next_try_stands():
    innocent = hogs.Eviction("job2")
    innocent.decide(False, hogs.redo("ended while kbx looked for the attempt whose GPU work would not drain"))
    run = _attempt({"job2": innocent}, [record(Status.OUT_OF_MEMORY, "killed"), record(Status.OK)])
    assert run.execute() == record(Status.OK) and run.retries == 1
    assert "ended while kbx looked" in run.failures[0]


def test_an_attempt_ended_on_every_try_without_proof_is_no_verdict():
    evictions = {}
    tries = []
    for i in range(MAX_HARNESS_RETRIES + 1, 0, -1):
        eviction = hogs.Eviction(f"job{i}")
        eviction.decide(False, hogs.redo("NVML named its process, perhaps for a call in progress"))
        evictions[f"job{i}"] = eviction
        tries.append(record(Status.OUT_OF_MEMORY, "killed"))
    verdict = _attempt(evictions, tries).execute()
    assert verdict.status is Status.HARNESS_ERROR and "perhaps for a call in progress" in verdict.reason


@pytest.mark.parametrize("hunt_quiets", [True, False])
def test_a_baseline_measured_while_the_gpu_was_busy_is_measured_again_once_the_hog_is_ended(hunt_quiets):
    from kbx.driver.attempt import AttemptRun
    from kbx.protocol import JudgeOp

    busy, clean = {"row": {"quiet": False, "median_ms": 9.0}}, {"row": {"quiet": True, "median_ms": 1.0}}
    replies, asked = [busy, {"estimate_ms": 1.0}, clean], []
    run = AttemptRun.__new__(AttemptRun)
    run.ev = types.SimpleNamespace(hunt_gpu_hog=lambda since_us: hunt_quiets)
    run._timer_baseline = lambda op, shape, estimate_ms, frozen_counts=False: (asked.append(op), replies.pop(0))[1]
    if hunt_quiets:
        assert run._baseline_settled("n1", 1.0) is clean
        assert asked == [JudgeOp.BASELINE_MEASURE, JudgeOp.BASELINE_PREPARE, JudgeOp.BASELINE_MEASURE]
    else:  # the GPU stays busy: the first reply stands, and the attempt is redone as before
        assert run._baseline_settled("n1", 1.0) is busy and asked == [JudgeOp.BASELINE_MEASURE]


# --- the evidence, as a real evaluator learns it ------------------------------------------------

BACKGROUND = (Path(__file__).parents[1] / "zoo" / "ok_triton.py").read_text() + '''
import subprocess as _sp, sys as _sys, threading as _threading, time as _time

def _idle():
    while True:
        _time.sleep(0.05)

_threading.Thread(target=_idle, name="kbx-test-background", daemon=True).start()
_child = _sp.Popen([_sys.executable, "-c", "import time; time.sleep(60)"])
_inner = scale_add

def scale_add(input, other):
    _time.sleep(0.5)  # keeps the attempt in flight while the test looks
    return _inner(input, other)
'''
LOOK_S = 60.0


def test_the_driver_learns_a_candidates_own_threads_and_process_tree():
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    with Evaluator(EvalSettings(tasks_dir=str(FIXTURE_TASKS), workers=1, secret_seed=False)) as ev:
        seen: dict = {}

        def look() -> None:
            deadline = time.monotonic() + LOOK_S
            while time.monotonic() < deadline and not seen.get("trees"):
                for job, state in list(ev.worker_states.items()):
                    trees = ev.zygote.process_trees()
                    if state.threads and len(trees.get(job, [])) >= 2:
                        seen.update(threads=state.threads, trees=trees[job])
                time.sleep(0.2)

        import threading

        looker = threading.Thread(target=look)
        looker.start()
        (record,) = ev.evaluate([Attempt(task, BACKGROUND, "background")])
        looker.join()
    assert record.status is Status.OK, record.reason
    assert seen.get("threads") == ("kbx-test-background",) and len(set(seen["trees"])) >= 2
