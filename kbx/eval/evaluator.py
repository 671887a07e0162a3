"""The one evaluation path: attempt -> isolated worker -> trusted judge -> (GPU) timing -> record.

Every method, the CLI, `kbx.evaluate` and the benchmarks go through `Evaluator.evaluate`.
Per device there is one zygote (forks a fresh worker per attempt), a pool of judges (references
and verdicts) and a timer (the eager baselines). Attempts run concurrently up to
`EvalSettings.workers`. On a GPU each perf shape is prepared while the GPU is shared and measured
in a short exclusive window, kernel and baseline alike, with everyone else frozen
(kbx.eval.scheduler says who may use the GPU when).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import math
import queue
import random
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from kbx.eval import timing_policy, workdirs
from kbx.eval.isolation import require_sandbox
from kbx.eval.processes import ZYGOTE_DIED, JudgeClient, JudgePool, ZygoteClient
from kbx.eval.record import OUTPUT_TAIL_CHARS, VERDICT_FIELDS, EvalRecord, Mismatch, Status, truncate
from kbx.eval.sandbox_env import protect_process, redact
from kbx.eval.scheduler import FreezeFailed, GpuScheduler, Window
from kbx.eval.source import check_syntax
from kbx.tasks.registry import default_tasks_dir
from kbx.tasks.spec import FIXED, TaskInfo
from kbx.telemetry import Telemetry
from kbx.worker.child import HARNESS_ERROR, MEASURE, MEASURED, PREPARED, READY
from kbx.worker.sandbox import NAMESPACES, SANDBOX_ENV

CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}
EXIT_GRACE_S = 10.0  # how long a finished worker may take to exit before it is killed
SECRET_SEED_BITS = 31
SHM_DIR = "/dev/shm"
SHM_MIN_FREE_BYTES = 16 * 2**30  # perf-shape outputs of a few concurrent workers must fit
JUDGES_GPU = 4  # judge processes on a GPU machine, at least: one per two attempts in flight beyond that
WINDOW_SLACK_S = 1.0  # beyond a window's planned length (quiet wait, budget, one call) before its owner is killed
STACK_DUMP_WAIT_S = 1.0  # for the signalled processes to write their stacks
STACK_DUMP_CHARS = 3000  # of each log, in a stack dump
MAX_HARNESS_RETRIES = 2  # an attempt hit by a failure of kbx's own machinery is redone this often


class _HarnessFailure(Exception):
    """kbx's own machinery failed during an attempt (worker pool, worker set-up, judge): the
    attempt is redone, and never charged to the candidate."""


@dataclasses.dataclass(frozen=True)
class Attempt:
    """Code to judge for one task. `label` says where it came from (method, round, candidate)."""

    task: TaskInfo
    code: str
    label: str = ""


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    device: str = "cpu"  # "cpu" (Triton interpreter) or "cuda"
    gpu_index: int = 0
    public_seeds: tuple[int, ...] = (0,)
    secret_seed: bool = True  # add one seed drawn per run, so no kernel can be tuned to known inputs
    workers: int = 2
    check_timeout_s: float = 300.0
    time_timeout_s: float = 300.0
    judge_timeout_s: float = 600.0
    judges: int = 0  # judge processes; 0: JUDGES_GPU on a GPU, 1 on a CPU (where memory is the limit)
    check_perf_shape: bool | None = None  # default: on a GPU only (too slow for the interpreter)
    memory_limit_gb: float = 8.0  # address-space cap for CPU workers (not applicable with CUDA)
    min_free_gpu_gb: float = 8.0  # a new check starts only with this much device memory free (or none running)
    timing: timing_policy.TimingPolicy = dataclasses.field(default_factory=timing_policy.TimingPolicy)
    tasks_dir: str = ""
    keep_jobs: bool = False
    sandbox: str = NAMESPACES  # kbx.worker.sandbox: "namespaces", or "none" to run candidates without it

    @property
    def on_gpu(self) -> bool:
        return self.device == "cuda"


def evaluate_all(
    evaluate_one: Callable[[Attempt], EvalRecord], attempts: Sequence[Attempt], workers: int,
    on_record: Callable[[int, EvalRecord], None] | None = None,
) -> list[EvalRecord]:  # fmt: skip
    """`evaluate_one` over the attempts from `workers` threads; records in input order, and each
    also handed to `on_record(index, record)` as it comes."""
    records: list[EvalRecord | None] = [None] * len(attempts)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(evaluate_one, a): i for i, a in enumerate(attempts)}
        for future in concurrent.futures.as_completed(futures):
            i = futures[future]
            records[i] = future.result()
            if on_record:
                on_record(i, records[i])
    return records  # type: ignore[return-value]


class Evaluator:
    """Judges attempts on one device. Use as a context manager so worker processes are closed."""

    def __init__(self, settings: EvalSettings | None = None) -> None:
        settings = settings or EvalSettings()
        self.settings = dataclasses.replace(settings, timing=dataclasses.replace(settings.timing,
                                                                                  nvml_index=settings.gpu_index))
        s = self.settings
        self.tasks_dir = s.tasks_dir or str(default_tasks_dir())
        require_sandbox(s.sandbox, gpu=s.on_gpu)
        protect_process()
        self.workdir = workdirs.create(_fast_tmp())  # named for this driver; dead drivers' are removed
        rng = random.SystemRandom()
        self.secret_seed = rng.getrandbits(SECRET_SEED_BITS) if s.secret_seed else None
        self.ghost_seed = rng.getrandbits(SECRET_SEED_BITS)  # fresh inputs for the Triton-free replay
        env = {"KBX_TASKS_DIR": self.tasks_dir, "KBX_DEVICE": "cuda:0" if s.on_gpu else "cpu", SANDBOX_ENV: s.sandbox}
        if s.on_gpu:
            env["CUDA_VISIBLE_DEVICES"] = str(s.gpu_index)
        else:
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        self.zygote = ZygoteClient(env, self.workdir / "zygote.log")
        self.judges = JudgePool(env, self.workdir, s.judges or (max(JUDGES_GPU, s.workers // 2) if s.on_gpu else 1))
        self.timer = JudgeClient(env, self.workdir / "timer.log")  # baselines, so verdicts never wait on them
        meter = Telemetry(s.gpu_index) if s.on_gpu else None
        self.gpu_identity = {"gpu_index": s.gpu_index, "gpu_uuid": meter.uuid()} if meter else {}  # in every record
        self.gpu = GpuScheduler(self._freeze if s.on_gpu else None, free_bytes=meter and meter.free_memory_bytes,
                                min_free_bytes=int(s.min_free_gpu_gb * 2**30))  # fmt: skip
        for client in [*self.judges.clients, self.timer]:
            client.frozen_s = lambda: self.gpu.frozen_since(0.0)
        self.baselines: dict[tuple, dict] = {}  # (task, version, shape) -> the reference's timing row, per run
        self.timer_lock = threading.Lock()  # taken before a window, never inside one
        # evaluate() may be called from many threads at once (one per task); attempts in flight
        # over all of them never exceed `workers`.
        self.slots = threading.BoundedSemaphore(max(1, s.workers))
        self.active: dict[str, tuple[str, str, float]] = {}  # job -> (task, phase, since): see `in_flight`

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.zygote.close()
        self.judges.close()
        self.timer.close()
        if not self.settings.keep_jobs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def evaluate(
        self, attempts: Sequence[Attempt], on_record: Callable[[int, EvalRecord], None] | None = None
    ) -> list[EvalRecord]:
        """Judge attempts concurrently; records come back in input order."""
        return evaluate_all(self.evaluate_one, attempts, self.settings.workers, on_record)

    def _freeze(self, owner: str, timer: bool):
        """Stop everyone who could use the GPU but `owner`'s worker (and the timer, with `timer`);
        the thaw. Judges are stopped first: their work in flight drains while the zygote walks."""
        judges = [*self.judges.clients, *([] if timer else [self.timer])]
        for judge in judges:
            judge.stop()

        def thaw() -> None:
            self.zygote.thaw()
            for judge in judges:
                judge.cont()

        if not self.zygote.freeze({owner} if owner else set()):
            thaw()
            raise FreezeFailed("the worker pool did not confirm that every other candidate was stopped")
        return thaw

    def progress(self) -> str:
        """One line: attempts per stage, and how long the GPU has been held alone so far."""
        stages: dict[str, int] = {}
        for _, phase, _ in self.in_flight():
            stage = phase.split(" (")[0]  # "timed alone (shape)" counts as "timed alone"
            stages[stage] = stages.get(stage, 0) + 1
        counts = ", ".join(f"{n} {phase}" for phase, n in sorted(stages.items())) or "nothing in flight"
        if not self.settings.on_gpu:
            return counts
        return (f"{counts}; GPU held alone {self.gpu.frozen_since(0.0):.0f} s in {self.gpu.windows} windows "
                f"(longest {self.gpu.longest_window_s:.2f} s)")  # fmt: skip

    def in_flight(self) -> list[tuple[str, str, float]]:
        """(task, phase, seconds in it) for every attempt under way: where a slow run is stuck."""
        now = time.monotonic()
        return [(task, phase, now - since) for task, phase, since in list(self.active.values())]

    def dump_stacks(self) -> str:
        """The Python stacks of the judges, the timer and every attempt's worker, for diagnosing a
        stall: each dumps into its own log on SIGUSR1, and the tails of those logs come back."""
        clients = [*self.judges.clients, self.timer]
        for client in clients:
            client.signal(signal.SIGUSR1)
        jobs = list(self.active.items())
        for job_id, _ in jobs:
            self.zygote.signal_child(job_id, signal.SIGUSR1)
        time.sleep(STACK_DUMP_WAIT_S)
        logs = [(c.log_path.name, c.log_path) for c in clients]
        logs += [(f"{task} ({phase})", self.workdir / "jobs" / job_id / "stderr.txt") for job_id, (task, phase, _) in jobs]
        return "\n".join(f"--- {name} ---\n{_tail(path, STACK_DUMP_CHARS)}" for name, path in logs)

    def seeds_for(self, task: TaskInfo) -> dict[str, list[int]]:
        """The correctness plan: case name -> seeds, in order."""
        s = self.settings
        random_seeds = [*s.public_seeds, *([self.secret_seed] if self.secret_seed is not None else [])]
        plan = {c.name: ([0] if c.kind == FIXED else list(random_seeds)) for c in task.spec.cases}
        check_perf = s.on_gpu if s.check_perf_shape is None else s.check_perf_shape
        if check_perf and task.spec.perf:
            plan[task.spec.perf[0].name] = [random_seeds[-1]]
        return plan

    def evaluate_one(self, attempt: Attempt) -> EvalRecord:
        with self.slots:
            return self._evaluate_one(attempt)

    def _evaluate_one(self, attempt: Attempt) -> EvalRecord:
        task = attempt.task
        base = {"task": task.id, "task_version": task.spec.version, "label": attempt.label,
                "device": self.settings.device, "sandbox": self.settings.sandbox, **self.gpu_identity}  # fmt: skip
        if not attempt.code.strip():
            return EvalRecord(status=Status.NO_CODE, reason="no code was produced", **base)
        syntax = check_syntax(attempt.code)
        if syntax:
            return EvalRecord(status=Status.SYNTAX_ERROR, reason=f"syntax error at {syntax}",
                              error_type="SyntaxError", message=syntax, **base)  # fmt: skip
        return _Run(self, attempt, base).execute()


class _Run:
    """One attempt's trip through worker, judge and timing."""

    def __init__(self, ev: Evaluator, attempt: Attempt, base: dict) -> None:
        self.ev, self.attempt, self.base = ev, attempt, base
        self.task = attempt.task
        self.started = time.perf_counter()
        self.retries = 0

    def execute(self) -> EvalRecord:
        """The attempt, redone (in a fresh worker) while kbx's own machinery is what failed."""
        while True:
            self._new_try()
            try:
                return self._try()
            except _HarnessFailure as failure:
                if self.retries >= MAX_HARNESS_RETRIES:
                    return self._record(Status.HARNESS_ERROR, {}, reason=f"kbx's own machinery failed "
                                        f"{self.retries + 1} times, the last: {failure}")  # fmt: skip
                self.retries += 1

    def _new_try(self) -> None:
        self.job_id = uuid.uuid4().hex[:12]
        self.job_dir = self.ev.workdir / "jobs" / self.job_id
        self.stage_s = {"judge_s": 0.0, "time_s": 0.0, "gpu_wait_s": 0.0, "baseline_s": 0.0, "exclusive_s": 0.0,
                        "max_window_s": 0.0}  # see EvalRecord; fmt: skip
        self.exited = False
        self.ready = False  # the worker said it is about to run candidate code
        self.sandbox_s = 0.0
        self.frozen_mark = self.ev.gpu.frozen_since(0.0)

    def _try(self) -> EvalRecord:
        ev, s = self.ev, self.ev.settings
        self.job_dir.mkdir(parents=True)
        (self.job_dir / "candidate.py").write_text(self.attempt.code)
        seeds = ev.seeds_for(self.task)
        timing = s.on_gpu and bool(self.task.spec.perf)
        job = {
            "id": self.job_id, "job_dir": str(self.job_dir), "tasks_dir": ev.tasks_dir,
            "category": self.task.category, "stem": self.task.stem, "device": "cuda:0" if s.on_gpu else "cpu",
            "cases": list(seeds), "seeds": seeds, "ghost_seed": ev.ghost_seed,
            "timing": dataclasses.asdict(s.timing) if timing else None,
            "memory_limit_bytes": 0 if s.on_gpu else int(s.memory_limit_gb * 2**30),
            "sandbox": s.sandbox, "task_digest": self.task.digest,
        }  # fmt: skip
        self.events = ev.zygote.spawn(job)
        try:
            self._phase("waiting to check")
            ev.gpu.start_check(self.job_id, lambda: ev.zygote.send(self.job_id, "check"))
            self._phase("checking")
            try:
                checked = self._wait("checked", s.check_timeout_s)
            finally:
                ev.gpu.end_check(self.job_id)
            if checked["event"] != "checked":
                return self._failed_worker(checked, s.check_timeout_s)
            if checked["stage_status"] != "ran":
                return self._record(Status(checked["stage_status"]), checked, reason=_first_line(checked["message"]))
            verdict = self._judge({"op": "compare", "task": self.task.id, "digest": self.task.digest, "seeds": seeds,
                                   "outputs": str(self.job_dir / "outputs.pt")})  # fmt: skip
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
        ev, s = self.ev, self.ev.settings
        started = time.perf_counter()
        self._phase("preparing a timing")
        ev.zygote.send(self.job_id, "time")
        baselines: dict[str, dict] = {}
        while True:
            msg = self._wait((PREPARED, "timed"), s.time_timeout_s)
            if msg["event"] not in (PREPARED, "timed"):
                return self._failed_worker(msg, s.time_timeout_s, during="timing")
            if msg["event"] == "timed":
                break
            shape = msg["shape"]
            baselines[shape], measured = self._measure(shape, msg["estimate_ms"])
            if measured["event"] != MEASURED:
                return self._failed_worker(measured, self._window_limit_s(msg["estimate_ms"]), during="timed alone")
            row = measured["row"]
            if not row.get("quiet", True) and not row.get("hidden_work"):  # the kernel's own hidden work is its fault
                raise _HarnessFailure(f"shape {shape}: the GPU did not go quiet for the timing (another process "
                                      "kept using it)")  # fmt: skip
            self._phase("preparing a timing")
        timed = msg
        self._phase("saving timed outputs")
        saved = self._wait("saved", s.time_timeout_s)
        if saved["event"] != "saved":
            return self._failed_worker(saved, s.time_timeout_s, during="saving timed outputs")
        self.stage_s["time_s"] = time.perf_counter() - started
        recheck = self._judge({"op": "compare_perf", "task": self.task.id, "digest": self.task.digest,
                               "rows": timed["rows"], "outputs": str(self.job_dir / "perf_outputs.pt")})  # fmt: skip
        if recheck["status"] != Status.OK.value:
            fields["mismatch"] = _mismatch(recheck["mismatch"])
            return self._record(Status(recheck["status"]), checked, reason=recheck["reason"], **fields)
        combined = timing_policy.combine(self.task, timed["rows"], baselines)
        return self._record(
            combined.status, checked, reason=combined.reason, timed=True, speedup=combined.speedup,
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
        if key in ev.baselines:
            return ev.baselines[key], self._window(shape, estimate_ms)
        self._phase(f"waiting for the timer ({shape})")
        with ev.timer_lock:
            if key in ev.baselines:
                return ev.baselines[key], self._window(shape, estimate_ms)
            started = time.perf_counter()
            self._phase(f"baseline ({shape})")
            prepared = ev.timer.request({"op": "baseline_prepare", "task": self.task.id, "digest": self.task.digest,
                                         "shape": shape, "timing": dataclasses.asdict(ev.settings.timing)},
                                        ev.settings.judge_timeout_s)  # fmt: skip
            if "error" in prepared:
                raise _HarnessFailure(f"reference timing failed: {prepared['error']}")

            def baseline() -> dict:
                return ev.timer.request({"op": "baseline_measure", "task": self.task.id, "shape": shape,
                                         "energy": False}, self._window_limit_s(prepared["estimate_ms"]),
                                        frozen_counts=False)  # fmt: skip

            reply: dict = {}
            measured = self._window(shape, estimate_ms, before=lambda: reply.update(baseline()))
            self.stage_s["baseline_s"] += time.perf_counter() - started
            row = reply.get("row") or {}
            # The timer's machinery, memory or a GPU that is not quiet are kbx's failures; a reference
            # that raises at a shape is the task's, and the shape is left out of the speedup.
            if "error" in reply or not row.get("quiet", True) or row.get("hidden_work") or "OutOfMemory" in row["error"]:
                why = reply.get("error") or row.get("error") or row.get("hidden_work") or "the GPU did not go quiet"
                raise _HarnessFailure(f"reference timing failed at {shape}: {why}")
            ev.baselines[key] = row
            return row, measured

    def _window(self, shape: str, estimate_ms, before=None) -> dict:
        """Let the worker measure `shape` with the GPU to itself (after `before`, the baseline's
        measurement, in the same window when given): its "measured" event, or how it ended."""
        self._phase(f"waiting for a window ({shape})")
        waiting = time.perf_counter()
        with self._exclusive(owner=self.job_id, timer=before is not None):
            self.stage_s["gpu_wait_s"] += time.perf_counter() - waiting
            if before is not None:
                self._phase(f"baseline timed alone ({shape})")
                before()
            self._phase(f"timed alone ({shape})")
            self.ev.zygote.send(self.job_id, MEASURE)
            return self._wait(MEASURED, self._window_limit_s(estimate_ms), frozen_counts=False)

    @contextlib.contextmanager
    def _exclusive(self, owner: str = "", timer: bool = False):
        """A window on the GPU; its length (not the wait for it) counts as this attempt's exclusive time."""
        window = Window()
        try:
            with self.ev.gpu.exclusive(owner, timer) as window:
                yield
        except FreezeFailed as exc:
            raise _HarnessFailure(str(exc)) from exc
        finally:
            self.stage_s["exclusive_s"] += window.length_s
            self.stage_s["max_window_s"] = max(self.stage_s["max_window_s"], window.length_s)

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
            loaded = judge.request({"op": "load", "outputs": request["outputs"]}, timeout)
            reply = loaded if "error" in loaded else judge.request(request, timeout)
        self.stage_s["judge_s"] += time.perf_counter() - started
        if "error" in reply:
            raise _HarnessFailure(f"judge failed: {reply['error']}")
        return reply

    def _wait(self, wanted: str | tuple[str, ...], timeout_s: float, frozen_counts: bool = True) -> dict:
        """The worker's next `wanted` event, or its end; time it spent frozen for others' windows
        does not count against `timeout_s` (`frozen_counts=False` inside its own window). Raises
        _HarnessFailure when the worker pool died, or the worker failed before it was ready to
        run candidate code."""
        wanted = (wanted,) if isinstance(wanted, str) else wanted
        gpu = self.ev.gpu
        started, frozen_mark = time.monotonic(), gpu.frozen_since(0.0)
        while True:
            frozen = gpu.frozen_since(frozen_mark) if frozen_counts else 0.0
            remaining = timeout_s - (time.monotonic() - started - frozen)
            if remaining <= 0:
                self.ev.zygote.kill(self.job_id)
                return {"event": "timeout"}
            try:
                msg = self.events.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            event = msg["event"]
            if event in ("exit", ZYGOTE_DIED):
                self.exited = True
            if event == READY:
                self.ready = True
                self.sandbox_s = float(msg.get("sandbox_s", 0.0))
            elif event == ZYGOTE_DIED:
                raise _HarnessFailure("the worker pool died (it restarts for the next try)")
            elif not self.ready and event in (HARNESS_ERROR, "exit"):
                why = msg.get("message") or f"exit code {msg.get('code')}, signal {msg.get('signal')}"
                raise _HarnessFailure(f"the worker failed while setting up, before any candidate code ran: {why}")
            elif event in (*wanted, "exit", "garbled"):
                return msg

    def _failed_worker(self, msg: dict, timeout_s: float, during: str = "checking") -> EvalRecord:
        event = msg["event"]
        if event == "timeout":
            return self._record(Status.TIMEOUT, {}, reason=f"no result within {timeout_s:.0f} s while {during}; killed")
        if event == "garbled":
            return self._record(Status.CRASHED, {}, reason="the worker's result channel was corrupted")
        sig, code = msg.get("signal", 0), msg.get("code", 0)
        if sig == signal.SIGKILL:
            return self._record(Status.OUT_OF_MEMORY, {}, reason="the worker was killed (SIGKILL), most likely by the "
                                "out-of-memory killer")  # fmt: skip
        if sig:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            kind = "crashed" if sig in CRASH_SIGNALS else "was killed"
            return self._record(Status.CRASHED, {}, reason=f"the worker {kind} with {name} while {during}")
        return self._record(Status.CRASHED, {}, reason=f"the worker exited with code {code} while {during}, "
                            "before reporting")  # fmt: skip

    def _finish(self) -> None:
        """Let the worker go (or kill it) and wait for its exit, so no process outlives its attempt."""
        ev = self.ev
        if not self.exited:
            ev.zygote.send(self.job_id, "exit")
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
                self.exited = self.events.get(timeout=remaining)["event"] in ("exit", ZYGOTE_DIED)
            except queue.Empty:
                continue
        ev.zygote.forget(self.job_id)
        ev.active.pop(self.job_id, None)
        if not ev.settings.keep_jobs:
            shutil.rmtree(self.job_dir, ignore_errors=True)

    def _phase(self, name: str) -> None:
        self.ev.active[self.job_id] = (self.task.id, name, time.monotonic())

    def _record(self, status: Status, checked: dict, **fields) -> EvalRecord:
        return EvalRecord(
            status=status,
            compile_s=float(checked.get("compile_s", 0.0)),
            check_s=float(checked.get("check_s", 0.0)),
            triton_launches=int(checked.get("launches", 0)),
            **self.stage_s,
            paused_s=max(0.0, self.ev.gpu.frozen_since(self.frozen_mark) - self.stage_s["exclusive_s"]),
            wall_s=time.perf_counter() - self.started,
            harness_retries=self.retries,
            sandbox_s=self.sandbox_s,
            output_tail=self._output_tail(),
            error_type=fields.pop("error_type", checked.get("error_type", "")),
            message=redact(truncate(fields.pop("message", checked.get("message", "")))),
            **{k: redact(v) if isinstance(v, str) else v for k, v in fields.items()},
            **self.base,
        )

    def _output_tail(self) -> str:
        parts = []
        for name in ("stdout.txt", "stderr.txt"):
            path = self.job_dir / name
            if path.is_file() and path.stat().st_size:
                parts.append(f"--- {name} ---\n" + _tail(path, OUTPUT_TAIL_CHARS))
        return redact("\n".join(parts)[-OUTPUT_TAIL_CHARS:])


def _mismatch(fields: dict) -> Mismatch:
    return Mismatch(**{k: tuple(map(tuple, v)) if k == "indices" else tuple(v) if isinstance(v, list) else v
                       for k, v in fields.items()})  # fmt: skip


def _tail(path: Path, chars: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - chars))
            return f.read().decode(errors="replace")
    except OSError as exc:
        return f"(unreadable: {exc})"


def _fast_tmp() -> str | None:
    """/dev/shm when it has room (outputs pass from worker to judge through memory), else the default."""
    try:
        if shutil.disk_usage(SHM_DIR).free >= SHM_MIN_FREE_BYTES:
            return SHM_DIR
    except OSError:
        pass
    return None


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
