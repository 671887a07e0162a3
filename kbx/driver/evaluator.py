"""The one evaluation path: attempt -> isolated worker -> trusted judge -> (GPU) timing -> record.

Every method, the CLI, `kbx.evaluate` and the benchmarks go through `Evaluator.evaluate`.
Per device there is one zygote (forks a fresh worker per attempt), a pool of judges (references
and verdicts) and a timer (the eager baselines). Attempts run concurrently up to
`EvalSettings.workers`. On a GPU each perf shape is prepared while the GPU is shared and measured
in a short exclusive window, kernel and baseline alike, with everyone else frozen
(kbx.driver.scheduler says who may use the GPU when).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence

from kbx.contract.attempt import Attempt
from kbx.core import provenance
from kbx.core.hardware import profile_for
from kbx.core.record import EvalRecord, Status
from kbx.core.secrets import protect_process
from kbx.core.source import check_syntax
from kbx.core.telemetry import Telemetry
from kbx.driver import hogs, workdirs
from kbx.driver.attempt import WINDOW_SLACK_S, AttemptRun, tail
from kbx.driver.costs import AttemptCosts
from kbx.driver.isolation import require_sandbox
from kbx.driver.memory import PeakTable, load_peaks
from kbx.driver.processes import JudgeClient, JudgePool, ZygoteClient, close_all
from kbx.driver.scheduler import FreezeFailed, GpuScheduler
from kbx.driver.settings import EvalSettings
from kbx.protocol import INTERPRETER_ENV, SANDBOX_ENV, STDERR_FILE, JudgeOp
from kbx.tasks.registry import default_tasks_dir
from kbx.tasks.spec import FIXED, TaskInfo

SECRET_SEED_BITS = 31
SHM_DIR = "/dev/shm"
SHM_MIN_FREE_BYTES = 16 * 2**30  # perf-shape outputs of a few concurrent workers must fit
# Thread pools of the libraries the workers and judges compute with (torch's OpenMP, BLAS for the
# interpreter's numpy): sized by `cpu_threads_per_process`, unless the user set them.
CPU_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
STACK_DUMP_WAIT_S = 1.0  # for the signalled processes to write their stacks
STACK_DUMP_CHARS = 3000  # of each log, in a stack dump


def cpu_threads_per_process(processes: int, evaluators: int = 1) -> int:
    """The host's CPUs shared evenly among the evaluators' processes (workers, judges, timer), at
    least one each. Left at one thread per core each, they oversubscribe the host many times over
    and OpenMP's spinning threads starve each other: four concurrent float64 checks of
    LinearAlgebra/eig at n512 on two cores took 18-21 s each, against 3.3-3.5 s with one thread each
    (docs/BENCHMARKS.md, 2026-11-27); on an H100 host (16 cores, 13 such processes) that check took
    226 s in one run."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // max(1, processes * evaluators))


def evaluate_all(
    evaluate_one: Callable[[Attempt], EvalRecord], attempts: Sequence[Attempt], workers: int,
    on_record: Callable[[int, EvalRecord], None] | None = None, costs: AttemptCosts | None = None,
) -> list[EvalRecord]:  # fmt: skip
    """`evaluate_one` over the attempts from `workers` threads, started longest first by `costs`
    (kbx.driver.costs), which learn each record's wall time; records in input order, and each also
    handed to `on_record(index, record)` as it comes."""
    records: list[EvalRecord | None] = [None] * len(attempts)
    order = costs.order([a.task.id for a in attempts]) if costs else range(len(attempts))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = {pool.submit(evaluate_one, attempts[i]): i for i in order}
        for future in concurrent.futures.as_completed(futures):
            i = futures[future]
            records[i] = future.result()
            if costs:
                costs.note(records[i].task, records[i].wall_s)
            if on_record:
                on_record(i, records[i])
    except BaseException:
        # Ctrl-C or a failure: no queued attempt starts (a plain `with` would run them all before
        # raising); those in flight end when the caller closes the evaluator.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    if costs:
        costs.save()
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
        judges = s.judge_count
        threads = str(cpu_threads_per_process(s.workers + judges + 1, s.host_share))
        env.update({name: threads for name in CPU_THREAD_VARS if name not in os.environ})
        if s.on_gpu:
            env["CUDA_VISIBLE_DEVICES"] = str(s.gpu_index)
        else:
            env[INTERPRETER_ENV] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        self.zygote = ZygoteClient(env, self.workdir / "zygote.log")
        self.judges = JudgePool(env, self.workdir, judges)
        self.timer = JudgeClient(env, self.workdir / "timer.log")  # baselines, so verdicts never wait on them
        meter = Telemetry(s.gpu_index) if s.on_gpu else None
        self.meter = meter  # NVML: per-process utilisation names a process whose GPU work will not drain
        self.gpu_identity = {"gpu_index": s.gpu_index, "gpu_uuid": meter.uuid()} if meter else {}  # in every record
        self.provenance = provenance.collect(s.gpu_index if s.on_gpu else None)  # in every record too
        # The peaks of the GPU that times (its NVML name, whatever the run's label): what no shape can pass
        self.profile = profile_for(meter.name()) if meter else None
        self.costs = AttemptCosts((meter.name() or "cuda") if meter else "cpu")
        self.peaks = load_peaks(meter.name()) if meter else PeakTable()
        borrowed = meter and self.peaks.measured_on and self.peaks.measured_on != meter.name()
        self.peaks_note = f" (peaks measured on {self.peaks.measured_on})" if borrowed else ""
        self.gpu = GpuScheduler(self._freeze if s.on_gpu else None, free_bytes=meter and meter.free_memory_bytes,
                                min_free_bytes=int(s.min_free_gpu_gb * 2**30),
                                capacity_bytes=self._memory_capacity(meter))  # fmt: skip
        for client in [*self.judges.clients, self.timer]:
            client.frozen_s = lambda: self.gpu.frozen_since(0.0)
        self.baselines: dict[tuple, dict] = {}  # (task, version, shape) -> the reference's timing row, per run
        self.timer_lock = threading.Lock()  # taken before a window, never inside one
        # evaluate() may be called from many threads at once (one per task); attempts in flight
        # over all of them never exceed `workers`.
        self.slots = threading.BoundedSemaphore(max(1, s.workers))
        self.active: dict[str, tuple[str, str, float]] = {}  # job -> (task, phase, since): see `in_flight`
        self.worker_states: dict[str, hogs.WorkerState] = {}  # job -> what tells its background GPU work from a call's
        self.evictions: dict[str, hogs.Eviction] = {}  # job -> how kbx ended it, until its attempt reads it

    def _memory_capacity(self, meter: Telemetry | None) -> int:
        """Device memory the attempts' reservations may take (kbx.driver.memory): the card's, less the
        `min_free_gpu_gb` headroom and the judges' and the timer's contexts; 0 (no limit, the
        headroom alone admits) where kbx.driver.memory.PEAKS_PATH has no peaks."""
        total = meter.total_memory_bytes() if meter else 0
        if not (total and self.peaks.tasks):
            return 0
        processes = self.settings.judge_count + 1
        headroom = int(self.settings.min_free_gpu_gb * 2**30) + processes * self.peaks.context_bytes
        return max(1, total - headroom)

    def memory_need(self, task: TaskInfo) -> int:
        """What an attempt at `task` reserves of the device's memory (kbx.driver.memory)."""
        return self.peaks.need_bytes(task.id, task.spec.version)

    def __enter__(self) -> Evaluator:
        return self

    def start(self) -> None:
        """Start the zygote and the judges now (on a GPU the timer too, which only times there) rather
        than at the first attempt, so that their imports (torch; CUDA on a GPU) overlap what the
        caller does before judging: kbx.run imports MLflow and looks for a run to resume meanwhile."""
        for process in [self.zygote, *self.judges.clients, *([self.timer] if self.settings.on_gpu else [])]:
            process.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        close_all([self.zygote, *self.judges.clients, self.timer])
        if not self.settings.keep_jobs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def evaluate(
        self, attempts: Sequence[Attempt], on_record: Callable[[int, EvalRecord], None] | None = None
    ) -> list[EvalRecord]:
        """Judge attempts concurrently, longest first (kbx.driver.costs); records come back in input order."""
        return evaluate_all(self.evaluate_one, attempts, self.settings.workers, on_record, self.costs)

    def _freeze(self, owner: str):
        """Stop everyone who could use the GPU but the timer: the judges and every candidate's whole
        process tree, `owner`'s too (its threads must not disturb the baseline) until
        `hand_window_to(owner)`; the thaw. Judges are stopped first: their work in flight drains
        while the zygote walks."""
        for judge in self.judges.clients:
            judge.stop()

        def thaw() -> None:
            self.zygote.thaw()
            for judge in [*self.judges.clients, self.timer]:
                judge.cont()

        if not self.zygote.freeze():
            thaw()
            raise FreezeFailed("the worker pool did not confirm that every other candidate was stopped")
        return thaw

    def hand_window_to(self, owner: str) -> None:
        """In a window, once the timer has measured the baseline or found the GPU quiet: the timer
        stops and the owner's worker continues (its child processes stay stopped)."""
        self.timer.stop()
        self.zygote.release(owner)

    def timer_quiet(self) -> bool:
        """In a window: whether the timer finds the GPU quiet within the quiet wait (kbx.sandbox.judge, QUIET)."""
        timing = self.settings.timing
        reply = self.timer.request({"op": JudgeOp.QUIET, "timing": dataclasses.asdict(timing)},
                                   timing.quiet_wait_s + WINDOW_SLACK_S, frozen_counts=False)  # fmt: skip
        return bool(reply.get("quiet"))

    def hunt_gpu_hog(self, since_us: float) -> bool:
        """In a window whose GPU did not go quiet: find and end the attempt whose GPU work keeps running
        (kbx.driver.hogs), from NVML's samples after `since_us`; whether the GPU is quiet now."""
        trees = self.zygote.process_trees()
        suspects = [hogs.Suspect(job, tuple(pids), self.worker_states.get(job) or hogs.WorkerState())
                    for job, pids in trees.items() if pids]  # fmt: skip
        trusted = {os.getpid(), self.zygote.pid(), *(c.proc.pid for c in [*self.judges.clients, self.timer] if c.proc)}
        samples = self.meter.process_samples(since_us) if self.meter else []

        def end(eviction: hogs.Eviction) -> None:
            self.evictions[eviction.job] = eviction  # before the kill: its attempt reads it when the worker dies
            self.zygote.kill(eviction.job)

        _, quiet = hogs.hunt(suspects, samples, since_us, trusted, hogs.Seams(end, self.timer_quiet))
        return quiet

    def progress(self) -> str:
        """One line: attempts per stage, and how long the GPU has been held alone so far."""
        stages: dict[str, int] = {}
        for _, phase, _ in self.in_flight():
            stage = phase.split(" (")[0]  # "timed alone (shape)" counts as "timed alone"
            stages[stage] = stages.get(stage, 0) + 1
        counts = ", ".join(f"{n} {phase}" for phase, n in sorted(stages.items())) or "nothing in flight"
        if not self.settings.on_gpu:
            return counts
        gib = 2**30
        memory = (f"; memory reserved {self.gpu.reserved_bytes() / gib:.0f} of {self.gpu.capacity_bytes / gib:.0f} GiB"
                  f"{self.peaks_note}" if self.gpu.capacity_bytes else "")  # fmt: skip
        return (f"{counts}; GPU held alone {self.gpu.frozen_since(0.0):.0f} s in {self.gpu.windows} windows "
                f"(longest {self.gpu.longest_window_s:.2f} s){memory}")  # fmt: skip

    def judge_startups(self) -> list[dict[str, float]]:
        """Each judge's start-up by phase (seconds), as it reported at its first request; the timer's last."""
        return [client.startup_s for client in [*self.judges.clients, self.timer] if client.startup_s]

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
        logs += [(f"{task} ({phase})", self.workdir / "jobs" / job_id / STDERR_FILE) for job_id, (task, phase, _) in jobs]
        return "\n".join(f"--- {name} ---\n{tail(path, STACK_DUMP_CHARS)}" for name, path in logs)

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
                "device": self.settings.device, "sandbox": self.settings.sandbox, **self.gpu_identity,
                **self.provenance}  # fmt: skip
        if not attempt.code.strip():
            return EvalRecord(status=Status.NO_CODE, reason="no code was produced", **base)
        syntax = check_syntax(attempt.code)
        if syntax:
            return EvalRecord(status=Status.SYNTAX_ERROR, reason=f"syntax error at {syntax}",
                              error_type="SyntaxError", message=syntax, **base)  # fmt: skip
        return AttemptRun(self, attempt, base).execute()


def _fast_tmp() -> str | None:
    """/dev/shm when it has room (outputs pass from worker to judge through memory), else the default."""
    try:
        if shutil.disk_usage(SHM_DIR).free >= SHM_MIN_FREE_BYTES:
            return SHM_DIR
    except OSError:
        pass
    return None
