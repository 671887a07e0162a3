"""One attempt's trip through its worker, the judge and (on a GPU) its timing windows.

`Evaluator.evaluate_one` (kbx.driver.evaluator) makes an AttemptRun per attempt: spawn a worker
through the zygote, start its check when the scheduler allows, ask a judge for the verdict, then
per perf shape wait for the worker's preparation and measure it (and the eager baseline, the first
time) in an exclusive window (kbx.driver.scheduler). A failure of kbx's own machinery redoes the
attempt in a fresh worker, and after MAX_HARNESS_RETRIES is recorded as `harness_error`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import queue
import shutil
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Protocol

from kbx.contract import timing_policy
from kbx.contract.attempt import Attempt
from kbx.core.hardware import Hardware
from kbx.core.record import OUTPUT_TAIL_CHARS, VERDICT_FIELDS, EvalRecord, Mismatch, Status, truncate
from kbx.core.secrets import redact
from kbx.driver import hogs
from kbx.driver.processes import JudgeClient, JudgePool, ZygoteClient
from kbx.driver.scheduler import ALL_MEMORY, FreezeFailed, GpuScheduler, Window
from kbx.driver.settings import EvalSettings
from kbx.protocol import (
    CANDIDATE_FILE,
    OUTPUTS_FILE,
    PERF_OUTPUTS_FILE,
    STAGE_RAN,
    STDERR_FILE,
    STDOUT_FILE,
    Command,
    Event,
    JudgeOp,
)
from kbx.tasks.spec import TaskInfo

CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}
EXIT_GRACE_S = 10.0  # how long a finished worker may take to exit before it is killed
WINDOW_SLACK_S = 1.0  # beyond a window's planned length (quiet wait, budget, one call) before its owner is killed
MAX_HARNESS_RETRIES = 2  # an attempt hit by a failure of kbx's own machinery is redone this often
THREAD_NAME_CHARS = 80  # of a thread name a worker reports
EVICTION_WAIT_S = 60.0  # for the hunt that ended a worker to decide its verdict (it takes a few quiet waits)
PATROL_EVERY_S = 20.0  # a worker running candidate code this long unfrozen opens a window to see that the GPU drains



class AttemptHost(Protocol):
    """What an attempt uses of its evaluator (kbx.driver.evaluator.Evaluator): its processes, its
    GPU scheduler, the run's seeds and baselines, and who holds a window."""

    settings: EvalSettings
    workdir: Path
    tasks_dir: str
    ghost_seed: int
    zygote: ZygoteClient
    judges: JudgePool
    timer: JudgeClient  # times the eager baselines
    timer_lock: threading.Lock  # taken before a window, never inside one
    gpu: GpuScheduler
    baselines: dict[tuple, dict]  # (task, version, shape) -> the reference's timing row, per run
    active: dict[str, tuple[str, str, float]]  # job -> (task, phase, since)
    profile: Hardware | None  # the timing GPU's hardware profile: the limits no shape passes (None: unknown)
    worker_states: dict[str, hogs.WorkerState]  # job -> what tells its background GPU work from a call's
    evictions: dict[str, hogs.Eviction]  # job -> how kbx ended it (kbx.driver.hogs), until its attempt reads it

    def memory_need(self, task: TaskInfo) -> int: ...

    def hand_window_to(self, owner: str) -> None: ...

    def timer_quiet(self) -> bool: ...

    def hunt_gpu_hog(self, since_us: float) -> bool: ...

    def seeds_for(self, task: TaskInfo) -> dict[str, list[int]]: ...


class _HarnessFailure(Exception):
    """kbx's own machinery failed during an attempt (worker pool, worker set-up, judge): the
    attempt is redone, and never charged to the candidate."""


class _Ended(Exception):
    """kbx ended this attempt's worker in its own window, its GPU work being what would not drain
    (kbx.driver.hogs): the attempt's eviction says what follows."""


class AttemptRun:
    """One attempt's trip through worker, judge and timing."""

    def __init__(self, ev: AttemptHost, attempt: Attempt, base: dict) -> None:
        self.ev, self.attempt, self.base = ev, attempt, base
        self.task = attempt.task
        self.started = time.perf_counter()
        self.retries = 0
        self.redone_s = 0.0  # the tries redone so far (EvalRecord.redone_s)
        self.failures: list[str] = []  # why each redone try was kbx's failure (EvalRecord.harness_failures)
        self.busy_tries = 0  # tries whose timing pointed at the candidate's own hidden work (_charged_on_every_try)
        self.alone = False  # the device's memory reserved whole for this attempt (after running out of it)

    def execute(self) -> EvalRecord:
        """The attempt, redone (in a fresh worker) while kbx's own machinery is what failed, and once
        with the device's memory to itself if it ran out of memory beside other attempts. An attempt kbx
        ended because its GPU work would not drain (kbx.driver.hogs) is charged or redone as the hunt decided."""
        while True:
            self._new_try()
            try:
                record, failure = self._borrowed(self._try()), None
            except (_HarnessFailure, _Ended) as exc:
                record, failure = None, exc
            eviction = self.ev.evictions.pop(self.job_id, None)
            if eviction is not None:
                eviction.decided.wait(EVICTION_WAIT_S)
                if eviction.charged:
                    return self._record(Status.HIDDEN_WORK, {}, reason=eviction.reason)
                record, failure = None, _HarnessFailure(eviction.reason or "ended by kbx while its window was hunted")
            if record is None:
                if self.retries >= MAX_HARNESS_RETRIES:
                    return self._record(Status.HARNESS_ERROR, {}, reason=f"kbx's own machinery failed "
                                        f"{self.retries + 1} times, the last: {failure}")  # fmt: skip
                self.retries += 1
                self.failures.append(redact(_first_line(str(failure))))
                self.redone_s = time.perf_counter() - self.started
                continue
            if record.status is not Status.OUT_OF_MEMORY or not self.ev.settings.on_gpu:
                return record
            if self.alone:
                return dataclasses.replace(record, reason=f"{record.reason} (again with the device's memory to itself)")
            self.alone = True  # the others' memory may be what ran out: only alone is it the candidate's
            self.redone_s = time.perf_counter() - self.started

    def _borrowed(self, record: EvalRecord) -> EvalRecord:
        """The try's record, or `borrowed_answer` if the candidate reached for kbx's own answers at any
        point (its worker's Event.BORROWED, read by the time the try ends): whatever came of it after,
        its verdict is on kbx's work, not its own."""
        if not self.borrowed:
            return record
        return dataclasses.replace(record, status=Status.BORROWED_ANSWER, reason=redact(self.borrowed))

    def _memory_need(self) -> int:
        """Bytes of device memory this try reserves (kbx.driver.memory): all of it when alone."""
        return ALL_MEMORY if self.alone else self.ev.memory_need(self.task)

    def _new_try(self) -> None:
        self.job_id = uuid.uuid4().hex[:12]
        self.job_dir = self.ev.workdir / "jobs" / self.job_id
        self.stage_s = {"start_s": 0.0, "judge_s": 0.0, "judge_perf_s": 0.0, "judge_wait_s": 0.0, "time_s": 0.0,
                        "save_s": 0.0, "gpu_wait_s": 0.0, "baseline_s": 0.0, "exclusive_s": 0.0,
                        "max_window_s": 0.0}  # see EvalRecord; fmt: skip
        self.exited = False
        self.candidate_ran = False  # the worker said it is about to import the candidate (Event.CANDIDATE)
        self.borrowed = ""  # what the candidate reached for of kbx's own answers (Event.BORROWED), if anything
        self.sandbox_s = 0.0
        self.frozen_mark = self.ev.gpu.frozen_since(0.0)

    def _try(self) -> EvalRecord:
        ev, s = self.ev, self.ev.settings
        self.job_dir.mkdir(parents=True)
        (self.job_dir / CANDIDATE_FILE).write_text(self.attempt.code)
        seeds = ev.seeds_for(self.task)
        timing = s.on_gpu and bool(self.task.spec.perf)
        job = {
            "id": self.job_id, "job_dir": str(self.job_dir), "tasks_dir": ev.tasks_dir,
            "category": self.task.category, "stem": self.task.stem, "device": "cuda:0" if s.on_gpu else "cpu",
            "cases": list(seeds), "seeds": seeds, "ghost_seed": ev.ghost_seed,
            "timing": dataclasses.asdict(s.timing) if timing else None,
            "memory_limit_bytes": 0 if s.on_gpu else int(s.memory_limit_gb * 2**30),
            "sandbox": s.sandbox, "task_digest": self.task.digest, "expert": self.attempt.expert,
        }  # fmt: skip
        starting = time.perf_counter()
        ev.worker_states[self.job_id] = hogs.WorkerState()
        self.events = ev.zygote.spawn(job)
        try:
            self._phase("waiting to check")
            ev.gpu.start_check(self.job_id, lambda: ev.zygote.send(self.job_id, Command.CHECK), self._memory_need())
            self.stage_s["start_s"] = time.perf_counter() - starting
            self._phase("checking")
            checked = self._wait(Event.CHECKED, s.check_timeout_s)
            if checked["event"] != Event.CHECKED:
                return self._failed_worker(checked, s.check_timeout_s)
            if checked["stage_status"] != STAGE_RAN:
                return self._record(Status(checked["stage_status"]), checked, reason=_first_line(checked["message"]))
            verdict = self._judge({"op": JudgeOp.COMPARE, "task": self.task.id, "digest": self.task.digest, "seeds": seeds,
                                   "outputs": str(self.job_dir / OUTPUTS_FILE)})  # fmt: skip
            status = Status(verdict["status"])
            fields = {k: verdict[k] for k in VERDICT_FIELDS}
            fields["mismatch"] = _mismatch(verdict["mismatch"])
            if status is not Status.OK or not timing:
                skipped = "" if status is not Status.OK else "no GPU: timing needs a CUDA device"
                return self._record(status, checked, reason=verdict["reason"], timing_skipped_reason=skipped, **fields)
            return self._timed(checked, fields)
        finally:
            self._finish()

    def _timed(self, checked: dict, fields: dict) -> EvalRecord:
        """Each perf shape: the worker prepares it (GPU shared), the baseline is made ready, then the
        worker measures it in an exclusive window."""
        s = self.ev.settings
        started = time.perf_counter()
        self._phase("preparing a timing")
        self._command(Command.TIME)
        baselines: dict[str, dict] = {}
        busy: dict[str, str] = {}  # shape -> the GPU was not quiet while the owner alone could use it
        while True:
            msg = self._wait((Event.PREPARED, Event.TIMED), s.time_timeout_s)
            if msg["event"] not in (Event.PREPARED, Event.TIMED):
                return self._failed_worker(msg, s.time_timeout_s, during="timing")
            if msg["event"] == Event.TIMED:
                break
            shape = msg["shape"]
            baselines[shape], measured = self._measure(shape, msg["estimate_ms"])
            if measured["event"] != Event.MEASURED:
                return self._failed_worker(measured, self._window_limit_s(msg["estimate_ms"]), during="timed alone")
            row = measured["row"]
            if row.get("hidden_unconfirmed"):
                busy[shape] = self._charged_on_every_try(f"shape {shape}: {row['hidden_unconfirmed']}")
            elif not row.get("quiet", True) and not row.get("hidden_work"):
                busy[shape] = self._owner_busy(shape)
            self._phase("preparing a timing")
        timed = msg
        for row in timed["rows"]:
            row["hidden_work"] = row.get("hidden_work") or busy.get(row["shape"], "")
        self._phase("saving timed outputs")
        saving = time.perf_counter()
        saved = self._wait(Event.SAVED, s.time_timeout_s)
        if saved["event"] != Event.SAVED:
            return self._failed_worker(saved, s.time_timeout_s, during="saving timed outputs")
        self.stage_s["save_s"] = time.perf_counter() - saving
        self.stage_s["time_s"] = time.perf_counter() - started
        # Nothing of the candidate's may run while the judge reads the file: it maps it (`mmap`, GBs
        # at perf shapes, read once) rather than copying it, and a file cut short under a mapping
        # would crash the judge (SIGBUS), not the candidate. This also frees the worker's GPU memory
        # before the judge computes the reference at the perf shapes.
        self._end_worker()
        judged_before = self.stage_s["judge_s"]
        recheck = self._judge({"op": JudgeOp.COMPARE_PERF, "task": self.task.id, "digest": self.task.digest,
                               "rows": timed["rows"], "outputs": str(self.job_dir / PERF_OUTPUTS_FILE),
                               "mmap": True})  # fmt: skip
        self.stage_s["judge_perf_s"] = self.stage_s["judge_s"] - judged_before
        if recheck["status"] != Status.OK.value:
            fields["mismatch"] = _mismatch(recheck["mismatch"])
            return self._record(Status(recheck["status"]), checked, reason=recheck["reason"], **fields)
        combined = timing_policy.combine(self.task, timed["rows"], baselines, self.ev.profile)
        replayed = next((f"shape {r['shape']}: {r['replayed']}" for r in timed["rows"] if r.get("replayed")), "")
        return self._record(
            Status.REPLAYED_RESULT if replayed else combined.status, checked, reason=replayed or combined.reason,
            timed=True, speedup=combined.speedup,
            shapes=tuple(combined.rows), runtime_ms=math.fsum(r.kernel_ms_median for r in combined.rows),
            baseline_ms=math.fsum(r.baseline_ms_median for r in combined.rows), **fields,
        )  # fmt: skip

    def _measure(self, shape: str, estimate_ms) -> tuple[dict, dict]:
        """The reference's timing row for `shape` and the worker's "measured" event (or how it
        ended). The eager baseline is timed once per (task, version, shape) in a run, by the timer:
        prepared while the GPU is shared, then measured in the same window as the kernel, just
        before it; later attempts at the task reuse it. Raises _HarnessFailure."""
        ev = self.ev
        key = (self.task.id, self.task.spec.version, shape)
        self._phase(f"waiting for the timer ({shape})")
        with ev.timer_lock:
            if key in ev.baselines:
                return ev.baselines[key], self._window(shape, estimate_ms, before=self._settled)
            started = time.perf_counter()
            self._phase(f"baseline ({shape})")
            prepared = self._timer_baseline(JudgeOp.BASELINE_PREPARE, shape, estimate_ms, frozen_counts=True)
            if "error" in prepared:
                raise _HarnessFailure(f"reference timing failed: {prepared['error']}")

            def baseline() -> dict:
                return self._baseline_settled(shape, prepared["estimate_ms"])

            reply: dict = {}
            measured = self._window(shape, estimate_ms, before=lambda: reply.update(baseline()))
            self.stage_s["baseline_s"] += time.perf_counter() - started
            row = reply.get("row") or {}
            # The timer's machinery, memory or a GPU that is not quiet are kbx's failures; a reference
            # that raises at a shape is the task's, and the shape is left out of the speedup.
            suspect = row.get("hidden_work") or row.get("hidden_unconfirmed")
            if "error" in reply or not row.get("quiet", True) or suspect or "OutOfMemory" in row["error"]:
                why = reply.get("error") or row.get("error") or suspect or "the GPU did not go quiet"
                raise _HarnessFailure(f"reference timing failed at {shape}: {why}")
            ev.baselines[key] = row
            return row, measured

    def _window(self, shape: str, estimate_ms, before) -> dict:
        """Let the worker measure `shape` with the GPU to itself: the window opens with only the
        timer running, which first (`before`) waits for the GPU to go quiet and measures the baseline if
        it is not known yet, then hands the GPU to the worker. Its "measured" event, or how it ended."""
        self._phase(f"waiting for a window ({shape})")
        waiting = time.perf_counter()
        with self._exclusive(owner=self.job_id):
            self.stage_s["gpu_wait_s"] += time.perf_counter() - waiting
            self._phase(f"timer alone ({shape})")
            before()
            if self.job_id in self.ev.evictions:
                raise _Ended()
            self.ev.hand_window_to(self.job_id)
            self._phase(f"timed alone ({shape})")
            self._command(Command.MEASURE)
            return self._wait(Event.MEASURED, self._window_limit_s(estimate_ms), frozen_counts=False)

    def _settled(self) -> None:
        """A window's first step where the baseline is known: the GPU quiet (`_settle`), or the attempt redone."""
        if not self._settle():
            raise _HarnessFailure("the GPU did not go quiet for a timing window")

    def _baseline_settled(self, shape: str, estimate_ms: float) -> dict:
        """A window's first step where the baseline is measured: the timer's reply. Its measuring first waits
        for the GPU to go quiet; where it did not, the attempt whose work keeps running is found and ended
        (kbx.driver.hogs), and the baseline is prepared and measured again."""
        hunt_from_us = time.time() * 1e6 + hogs.SETTLE_S * 1e6
        reply = self._timer_baseline(JudgeOp.BASELINE_MEASURE, shape, estimate_ms)
        if "error" in reply or (reply.get("row") or {}).get("quiet", True) or not self.ev.hunt_gpu_hog(hunt_from_us):
            return reply
        again = self._timer_baseline(JudgeOp.BASELINE_PREPARE, shape, estimate_ms)
        return again if "error" in again else self._timer_baseline(JudgeOp.BASELINE_MEASURE, shape, again["estimate_ms"])

    def _timer_baseline(self, op: str, shape: str, estimate_ms: float, frozen_counts: bool = False) -> dict:
        """The timer's reply to preparing (shared, or again in a window) or measuring the baseline at `shape`."""
        ev = self.ev
        if op == JudgeOp.BASELINE_PREPARE:
            request = {"op": op, "task": self.task.id, "digest": self.task.digest, "shape": shape,
                       "timing": dataclasses.asdict(ev.settings.timing)}  # fmt: skip
            return ev.timer.request(request, ev.settings.judge_timeout_s, frozen_counts=frozen_counts)
        request = {"op": op, "task": self.task.id, "shape": shape, "energy": False}
        return ev.timer.request(request, self._window_limit_s(estimate_ms), frozen_counts=frozen_counts)

    def _settle(self) -> bool:
        """In a window, before anyone continues: whether the GPU went quiet. The timer waits for the work
        frozen processes had queued to drain; where it does not, the attempt whose work keeps running is
        found and ended (kbx.driver.hogs), and the timer is asked again."""
        hunt_from_us = time.time() * 1e6 + hogs.SETTLE_S * 1e6
        if self.ev.timer_quiet():
            return True
        return self.ev.hunt_gpu_hog(hunt_from_us)

    def _patrol(self) -> None:
        """Open a window only to see that the GPU goes quiet, ending the attempt whose work keeps it busy:
        a candidate whose own background work stalls its calls waits for no one else's window."""
        phase = self.ev.active.get(self.job_id)
        self._phase("patrol: does the GPU go quiet?")
        with self._exclusive(owner=""):
            self._settle()
        if phase is not None:
            self.ev.active[self.job_id] = phase

    def _command(self, command: str) -> None:
        """Send the worker a command: from now on it runs calls again (`WorkerState.idle`)."""
        state = self.ev.worker_states.get(self.job_id)
        if state is not None:
            state.idle = False
        self.ev.zygote.send(self.job_id, command)

    @contextlib.contextmanager
    def _exclusive(self, owner: str = ""):
        """A window on the GPU; its length (not the wait for it) counts as this attempt's exclusive time."""
        window = Window()
        try:
            with self.ev.gpu.exclusive(owner) as window:
                yield
        except FreezeFailed as exc:
            raise _HarnessFailure(str(exc)) from exc
        finally:
            self.stage_s["exclusive_s"] += window.length_s
            self.stage_s["max_window_s"] = max(self.stage_s["max_window_s"], window.length_s)

    def _owner_busy(self, shape: str) -> str:
        """The GPU was busy after the owner's repetitions, with every other process frozen.

        The timer had found it quiet, with the owner frozen too, just before the owner continued, so
        the work is most likely the owner's (a thread, a side stream). Not surely: a frozen process's
        kernels already queued keep running, and the quiet probes read host time, which hiccups (a GEAK
        `fused_qr_solve` kernel was charged so on an H100 while the same code on the corpus line before
        it passed, and left the GPU quiet after every call when measured alone). So it is charged only
        when every try of the attempt shows it (_charged_on_every_try)."""
        return self._charged_on_every_try(
            f"the GPU stayed busy after shape {shape}'s repetitions with everyone but the candidate stopped",
            f"the GPU stayed busy with other work of the candidate's own process while shape {shape} was timed "
            "(everyone else was stopped)",
        )

    def _charged_on_every_try(self, suspicion: str, charge: str = "") -> str:
        """A timing that points at the candidate's own hidden work, but not surely (a busy GPU after its
        repetitions; every repetition disturbed while the GPU was quiet after): until every try of the
        attempt has shown it the attempt is redone (a harness failure, charged to no one), and if the
        tries disagree the one that did not show it stands; then the charge, with the count of tries."""
        self.busy_tries += 1
        if self.busy_tries <= MAX_HARNESS_RETRIES:
            raise _HarnessFailure(suspicion)
        return f"{charge or suspicion}, on each of {self.busy_tries} tries"

    def _window_limit_s(self, estimate_ms) -> float:
        pol = self.ev.settings.timing
        estimate_s = float(estimate_ms or 0.0) * 1e-3
        call_s = min(estimate_s if math.isfinite(estimate_s) else 0.0, pol.side_budget_s + pol.exclusive_grace_s)
        return pol.quiet_wait_s + pol.side_budget_s + call_s + WINDOW_SLACK_S

    def _judge(self, request: dict) -> dict:
        """The judge's reply; a failure of the judge itself is kbx's, so the attempt is redone."""
        started = time.perf_counter()
        self._phase(f"judge {request['op']}")
        timeout = self.ev.settings.judge_timeout_s
        with self.ev.judges.lease() as judge:
            self.stage_s["judge_wait_s"] += time.perf_counter() - started
            loaded = judge.request({"op": JudgeOp.LOAD, "outputs": request["outputs"], "mmap": request.get("mmap", False)},
                                   timeout)  # fmt: skip
            reply = loaded if "error" in loaded else judge.request(request, timeout)
        self.stage_s["judge_s"] += time.perf_counter() - started
        if "error" in reply:
            raise _HarnessFailure(f"judge failed: {reply['error']}")
        return reply

    def _wait(self, wanted: str | tuple[str, ...], timeout_s: float, frozen_counts: bool = True) -> dict:
        """The worker's next `wanted` event, or its end; time it spent frozen for others' windows
        does not count against `timeout_s` (`frozen_counts=False` inside its own window). While it runs
        candidate code (checking, preparing) it patrols every PATROL_EVERY_S (`_patrol`). Raises
        _HarnessFailure when the worker pool died, or the worker failed before it began importing
        the candidate (kbx.sandbox.child.CANDIDATE): making the task's inputs is kbx's work."""
        wanted = (wanted,) if isinstance(wanted, str) else wanted
        gpu = self.ev.gpu
        started, frozen_mark = time.monotonic(), gpu.frozen_since(0.0)
        patrols = frozen_counts and self.ev.settings.on_gpu and bool({Event.CHECKED, Event.PREPARED} & set(wanted))
        patrolled_s = 0.0
        while True:
            frozen = gpu.frozen_since(frozen_mark) if frozen_counts else 0.0
            ran_s = time.monotonic() - started - frozen
            if ran_s >= timeout_s:
                self.ev.zygote.kill(self.job_id)
                return {"event": Event.TIMEOUT}
            if patrols and ran_s - patrolled_s >= PATROL_EVERY_S:
                patrolled_s = ran_s
                self._patrol()
            try:
                msg = self.events.get(timeout=min(timeout_s - ran_s, 1.0))
            except queue.Empty:
                continue
            if self._note(msg, wanted):
                return msg

    def _note(self, msg: dict, wanted: tuple[str, ...]) -> bool:
        """Take note of a worker's event; whether `_wait` returns it. Raises _HarnessFailure as `_wait` says."""
        event = msg["event"]
        state = self.ev.worker_states.get(self.job_id)
        self._note_borrowed(msg)
        if event in (Event.EXIT, Event.ZYGOTE_DIED):
            self.exited = True
        if event == Event.READY:
            self.sandbox_s = float(msg.get("sandbox_s", 0.0))
        elif event == Event.CANDIDATE:
            self.candidate_ran = True
        elif event == Event.THREADS and state is not None:
            names = msg.get("names") if isinstance(msg.get("names"), list) else []
            state.threads = tuple(str(name)[:THREAD_NAME_CHARS] for name in names[:hogs.EVIDENCE_THREADS])
        elif event == Event.ZYGOTE_DIED:
            raise _HarnessFailure("the worker pool died (it restarts for the next try)")
        elif not self.candidate_ran and event in (Event.HARNESS_ERROR, Event.EXIT):
            why = msg.get("message") or f"exit code {msg.get('code')}, signal {msg.get('signal')}"
            raise _HarnessFailure(f"the worker failed while setting up, before any candidate code ran: {why}")
        elif event in (*wanted, Event.EXIT, Event.GARBLED):
            if state is not None and event in (Event.CHECKED, Event.PREPARED):
                state.idle = True  # it synchronised every call and waits for a command
            return True
        return False

    def _failed_worker(self, msg: dict, timeout_s: float, during: str = "checking") -> EvalRecord:
        event = msg["event"]
        if event == Event.TIMEOUT:
            return self._record(Status.TIMEOUT, {}, reason=f"no result within {timeout_s:.0f} s while {during}; killed")
        if event == Event.GARBLED:
            return self._record(Status.CRASHED, {}, reason="the worker's result channel was corrupted")
        sig, code = msg.get("signal", 0), msg.get("code", 0)
        if sig == signal.SIGKILL:
            return self._record(Status.OUT_OF_MEMORY, {}, reason="the worker was killed (SIGKILL), most likely by the "
                                "out-of-memory killer")  # fmt: skip
        if sig:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            if sig in CRASH_SIGNALS and self.job_id in self.ev.zygote.signalled:
                # kbx asked it for a stack dump (SIGUSR1, faulthandler), and dumping every thread is not
                # async-signal-safe: an honest worker crashed with SIGSEGV under dumps every 10 ms in CI
                # (tests/driver/test_diagnostics.py, 2026-11-29). Possibly kbx's doing, so redone, never charged.
                raise _HarnessFailure(f"the worker crashed with {name} while {during}, after kbx signalled it "
                                      "for a stack dump")  # fmt: skip
            kind = "crashed" if sig in CRASH_SIGNALS else "was killed"
            return self._record(Status.CRASHED, {}, reason=f"the worker {kind} with {name} while {during}")
        return self._record(Status.CRASHED, {}, reason=f"the worker exited with code {code} while {during}, "
                            "before reporting")  # fmt: skip

    def _finish(self) -> None:
        """Let the worker go (or kill it) and wait for its exit, so no process outlives its attempt."""
        ev = self.ev
        self._end_worker()
        ev.gpu.release(self.job_id)
        ev.zygote.forget(self.job_id)
        ev.active.pop(self.job_id, None)
        ev.worker_states.pop(self.job_id, None)
        if not ev.settings.keep_jobs:
            shutil.rmtree(self.job_dir, ignore_errors=True)

    def _end_worker(self) -> None:
        """Tell the worker to exit, kill it if it does not, and wait for it. It is the init of its
        PID namespace, so every process the candidate started ends with it."""
        ev = self.ev
        if not self.exited:
            ev.zygote.send(self.job_id, Command.EXIT)
        killed, deadline = False, time.monotonic() + EXIT_GRACE_S
        while not self.exited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if killed:
                    break  # the zygote reaps it; nothing more to wait for here
                ev.zygote.kill(self.job_id)
                killed, deadline = True, time.monotonic() + EXIT_GRACE_S
                continue
            try:
                msg = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            self._note_borrowed(msg)
            self.exited = msg["event"] in (Event.EXIT, Event.ZYGOTE_DIED)

    def _note_borrowed(self, msg: dict) -> None:
        if msg["event"] == Event.BORROWED and not self.borrowed:
            self.borrowed = str(msg.get("reason", "")) or "reached for kbx's own answers"

    def _phase(self, name: str) -> None:
        self.ev.active[self.job_id] = (self.task.id, name, time.monotonic())

    def _record(self, status: Status, checked: dict, **fields) -> EvalRecord:
        return EvalRecord(
            status=status,
            inputs_s=float(checked.get("inputs_s", 0.0)),
            compile_s=float(checked.get("compile_s", 0.0)),
            check_s=float(checked.get("check_s", 0.0)),
            triton_launches=int(checked.get("launches", 0)),
            **self.stage_s,
            paused_s=max(0.0, self.ev.gpu.frozen_since(self.frozen_mark) - self.stage_s["exclusive_s"]),
            wall_s=time.perf_counter() - self.started,
            redone_s=self.redone_s,
            harness_retries=self.retries,
            harness_failures=tuple(self.failures),
            sandbox_s=self.sandbox_s,
            output_tail=self._output_tail(),
            error_type=fields.pop("error_type", checked.get("error_type", "")),
            message=redact(truncate(fields.pop("message", checked.get("message", "")))),
            **{k: redact(v) if isinstance(v, str) else v for k, v in fields.items()},
            **self.base,
        )

    def _output_tail(self) -> str:
        parts = []
        for name in (STDOUT_FILE, STDERR_FILE):
            path = self.job_dir / name
            if path.is_file() and path.stat().st_size:
                parts.append(f"--- {name} ---\n" + tail(path, OUTPUT_TAIL_CHARS))
        return redact("\n".join(parts)[-OUTPUT_TAIL_CHARS:])


def _mismatch(fields: dict) -> Mismatch:
    return Mismatch(**{k: tuple(map(tuple, v)) if k == "indices" else tuple(v) if isinstance(v, list) else v
                       for k, v in fields.items()})  # fmt: skip


def tail(path: Path, chars: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - chars))
            return f.read().decode(errors="replace")
    except OSError as exc:
        return f"(unreadable: {exc})"


def _first_line(text: str) -> str:
    """The message's first line, as a record's one-line reason (at most 300 characters). A Python
    traceback in it gives way to the exception it ends with, so "judge failed: Traceback ...
    ValueError: bad shape" reads "judge failed: ValueError: bad shape", not the traceback's header."""
    head = "Traceback (most recent call last):"
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    if head in first:
        frames = [i for i, line in enumerate(lines) if line[:1].isspace()]  # "  File ...", "    code"
        after = frames[-1] + 1 if frames else 1
        raised = lines[after] if after < len(lines) else lines[-1]
        first = first.replace(head, raised).strip()
    return first[:300]
