"""The candidate's worker: a child forked from the zygote, one per attempt, never reused.

Order matters for trust: the process is locked down (own process group, private directory,
resource limits, stdout/stderr to files), the task's inputs are generated, instruments are
installed, and only then is the candidate imported. It reports on a dedicated pipe (`event_fd`)
that the candidate's output never reaches, and judges nothing itself: outputs are saved for the
trusted judge process, which owns the reference and the comparison.
"""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import signal
import sys
import threading
import time
import traceback

from kbx.core.record import MESSAGE_CHARS, truncate
from kbx.protocol import (
    CANDIDATE_FILE,
    OUTPUTS_FILE,
    PERF_OUTPUTS_FILE,
    SANDBOX_NAMESPACES,
    STAGE_RAN,
    STDERR_FILE,
    STDOUT_FILE,
    Command,
    Event,
)
from kbx.sandbox import answers, resumes
from kbx.sandbox import namespaces as sandbox
from kbx.sandbox.instrument import LaunchCounter, poison_cuda_allocator
from kbx.sandbox.threads import ThreadReport

CANDIDATE_MODULE = "kbx_candidate"
MAX_FILE_BYTES = 8 * 2**30  # RLIMIT_FSIZE: room for saved outputs, no disk filling
MAX_OPEN_FILES = 1024
# A BORROWED event's reason, in characters: JSON escapes one in at most 12 bytes, so the event is
# one atomic write to the pipe (PIPE_BUF, 4096 bytes), even from a candidate's thread.
REASON_CHARS = 300
# The timing protocol, per perf shape: the worker prepares it (GPU shared), says PREPARED, waits
# for MEASURE (its exclusive window, kbx.driver.scheduler), measures, says MEASURED. The events
# and their order are kbx.protocol's.


class Reporter:
    """Writes JSON events to the dedicated result pipe, with the os.write captured before import."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._write = os.write

    def send(self, **event) -> None:
        data = (json.dumps(event) + "\n").encode()
        while data:
            data = data[self._write(self._fd, data) :]


def lock_down(job: dict) -> None:
    """Own process group, private cwd, files for stdio, resource limits."""
    os.setsid()
    os.chdir(job["job_dir"])
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(STDOUT_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(STDERR_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for src, dst in ((null, 0), (out, 1), (err, 2)):
        os.dup2(src, dst)
        os.close(src)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - process-lifetime streams
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_OPEN_FILES, MAX_OPEN_FILES))
    if job.get("memory_limit_bytes"):
        limit = int(job["memory_limit_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.environ["TMPDIR"] = job["job_dir"]
    os.environ["HOME"] = job["job_dir"]
    os.environ["TRITON_CACHE_DIR"] = os.path.join(job["job_dir"], "triton-cache")
    drop_privileges()


def drop_privileges() -> None:
    """As root, drop every capability: with the driver non-dumpable
    (kbx.core.secrets.protect_process), its /proc/<pid>/environ (API keys) is then unreadable.
    A same-user ancestor's environment (the shell that started kbx) is not protected this way."""
    if os.geteuid() == 0:
        from kbx.core.secrets import drop_capabilities

        drop_capabilities()


def start_worker(job: dict, event_fd: int, control_fd: int) -> None:
    """Body of the zygote's fresh child: load the task, enter the sandbox, run the worker.

    The task module is loaded (and its file checked against the driver's digest) before the
    sandbox hides the tasks folder. kbx's own failures up to the worker's CANDIDATE event (set-up
    here, the task's inputs in run_child) come back as a `harness_error` event: no candidate code
    has run yet, so none of it can be the candidate's."""
    reporter = Reporter(event_fd)
    try:
        info = load_job_task(job)
        started = time.perf_counter()  # CLOCK_MONOTONIC: one clock for shim, init and worker
        if job["sandbox"] == SANDBOX_NAMESPACES:
            sandbox.enter(job, gpu=job["device"].startswith("cuda"))  # returns in the worker alone
        sandbox_s = time.perf_counter() - started
    except Exception as exc:
        reporter.send(event=Event.HARNESS_ERROR, message=f"{type(exc).__name__}: {exc}")
        raise
    run_child(job, info, reporter, control_fd, sandbox_s)


def load_job_task(job: dict):
    """The job's task, loaded from its file; a file that changed since the driver loaded it is refused."""
    from kbx.tasks.registry import load_task_id

    info = load_task_id(job["tasks_dir"], f"{job['category']}/{job['stem']}")
    if job.get("task_digest") and info.digest != job["task_digest"]:
        raise RuntimeError(f"the task file {info.path} changed during the run (digest {info.digest}, "
                           f"the driver loaded {job['task_digest']})")  # fmt: skip
    return info


def run_child(job: dict, info, reporter: Reporter, control_fd: int, sandbox_s: float = 0.0) -> None:
    """The worker: locked down, told when it may use the GPU, then the candidate's cases."""
    lock_down(job)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks into stderr.txt, for Evaluator.dump_stacks
    resumes.install()  # the timing's estimate tells a frozen call from a slow one
    reporter.send(event=Event.READY, sandbox_s=sandbox_s)
    import torch

    from kbx.sandbox import cases as case_tools

    if job.get("timing"):
        import kbx.sandbox.timing  # noqa: F401 - captures the timing functions before the candidate can touch them

    save = torch.save
    _fast_saves()
    device = job["device"]
    spec = info.spec
    if read_command(control_fd) != Command.CHECK:  # the driver says when this worker may use the GPU
        return
    inputs_started = time.perf_counter()
    try:
        calls, ghost_calls = _make_inputs(job, info, device)
    except Exception as exc:  # before any candidate code, so never the kernel's fault: out of memory on a
        # shared GPU (an H100 with 16 workers raised AcceleratorError, not OutOfMemoryError), a task's bug
        first_line = (str(exc).strip().splitlines() or [""])[0]
        reporter.send(event=Event.HARNESS_ERROR, message=f"making the task's inputs: {type(exc).__name__}: {first_line}")
        return

    inputs_s = time.perf_counter() - inputs_started
    threads = ThreadReport(lambda names: reporter.send(event=Event.THREADS, names=names),
                           {t.ident for t in threading.enumerate()})  # fmt: skip
    reporter.send(event=Event.CANDIDATE)  # from here on, whatever happens to this process is the candidate's doing
    guard = _answers_guard(job, reporter)
    counter = LaunchCounter()
    counter.install()
    started = time.perf_counter()
    entry, failure = _import_candidate(spec.entry)
    compile_s = time.perf_counter() - started
    guard.check_in_place()
    threads()
    if failure:
        reporter.send(event=Event.CHECKED, stage_status=failure[0], error_type=failure[1], message=failure[2],
                      inputs_s=inputs_s, compile_s=compile_s, check_s=0.0, launches=0)  # fmt: skip
        return

    started = time.perf_counter()
    _run_cases(case_tools, entry, threads, calls, ghost_calls, spec, counter, device, save, guard)
    reporter.send(event=Event.CHECKED, stage_status=STAGE_RAN, error_type="", message="", inputs_s=inputs_s,
                  compile_s=compile_s, check_s=time.perf_counter() - started, launches=counter.launches)  # fmt: skip
    if job.get("timing") and read_command(control_fd) == Command.TIME:
        time_shapes(entry, info, job, reporter, control_fd, save, counter)


def _make_inputs(job: dict, info, device: str) -> tuple[list, dict]:
    """Every case's inputs for each of its seeds, and the ghost replay's (kbx.sandbox.cases), made
    before the candidate is imported."""
    from kbx.tasks.inputs import make_generator
    from kbx.tasks.spec import FIXED

    spec, wanted = info.spec, set(job["cases"])
    plan = [(c, s) for c in info.all_cases() if c.name in wanted for s in job["seeds"][c.name]]
    ghost_seed = int(job["ghost_seed"])
    calls = [(case, seed, spec.make_inputs(case.params, make_generator(seed, device), device)) for case, seed in plan]
    ghost_calls = {c.name: (ghost_seed, spec.make_inputs(c.params, make_generator(ghost_seed, device), device))
                   for c in spec.cases if c.kind != FIXED and c.name in wanted}  # fmt: skip
    return calls, ghost_calls


def _answers_guard(job: dict, reporter: Reporter) -> answers.Guard:
    """The guard that refuses kbx's own answers (kbx.sandbox.answers), installed; it reports the first try."""
    view = answers.kbx_view(job["tasks_dir"], bool(job.get("expert")))

    def borrowed(reason: str) -> None:
        reporter.send(event=Event.BORROWED, reason=truncate(reason, REASON_CHARS))

    guard = answers.Guard(view, borrowed)
    guard.install()
    return guard


def _run_cases(case_tools, entry, threads: ThreadReport, calls, ghost_calls, spec, counter: LaunchCounter,
               device: str, save, guard) -> None:  # fmt: skip
    """Every case on its own clones of its inputs (the candidate's threads reported after each call), then
    the ghost replay; their outputs saved for the judge. `case_tools` is kbx.sandbox.cases as imported
    before the candidate was."""
    results = []
    reporting = threads.around(entry)
    for case, seed, call in calls:
        poison_cuda_allocator(device)
        counter.install()  # picks up launchers the candidate has imported since (Inductor's)
        results.append(case_tools.run_case(reporting, call, case.name, seed, spec.inplace, counter, device))
    counter.install()
    ghost = case_tools.ghost_replay(entry, calls, results, ghost_calls, counter, device, spec.inplace)
    guard.check_in_place()
    save({"results": results, "ghost": ghost}, OUTPUTS_FILE)


def time_shapes(entry, info, job: dict, reporter: Reporter, control_fd: int, save, counter: LaunchCounter) -> None:
    """Each perf shape prepared while the GPU is shared, measured in the window the driver grants."""
    from kbx.sandbox.timing import time_perf_shapes

    def enter(shape: str, estimate_ms: float) -> bool:
        reporter.send(event=Event.PREPARED, shape=shape, estimate_ms=estimate_ms)
        return read_command(control_fd) == Command.MEASURE

    def leave(row: dict) -> None:
        reporter.send(event=Event.MEASURED, row=row)

    started = time.perf_counter()
    rows, outputs = time_perf_shapes(entry, info, job["device"], job["timing"], lambda: counter.launches, enter, leave)
    reporter.send(event=Event.TIMED, rows=rows, time_s=time.perf_counter() - started)
    save(outputs, PERF_OUTPUTS_FILE)  # torch.save as captured before the candidate was imported
    reporter.send(event=Event.SAVED)


def _fast_saves() -> None:
    """torch.save settings for the outputs files, set before the candidate is imported. Measured on
    an H100 with 7 GB of perf outputs on the GPU (2026-11-27, docs/BENCHMARKS.md): 9.7 s as
    torch saves by default, 8.2 s without the checksum, 3.6 s copying through pinned memory too. The
    checksum guards against corruption in storage; the judge reads the file once, from memory, and
    judges whatever it holds."""
    from torch.utils.serialization import config

    config.save.compute_crc32 = False
    config.save.use_pinned_memory_for_d2h = True


def read_command(fd: int) -> str:
    """The next command from the driver ("" when the pipe closes)."""
    return _read_line(fd)


def _read_line(fd: int) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


def _import_candidate(entry_name: str):
    """(entry, None) or (None, (stage_status, error_type, message))."""
    import importlib.util

    with open(CANDIDATE_FILE) as f:
        code = f.read()
    try:
        compiled = compile(code, os.path.abspath(CANDIDATE_FILE), "exec")
    except SyntaxError as exc:
        return None, ("syntax_error", "SyntaxError", f"line {exc.lineno}: {exc.msg}")
    spec = importlib.util.spec_from_loader(CANDIDATE_MODULE, loader=None, origin=os.path.abspath(CANDIDATE_FILE))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = os.path.abspath(CANDIDATE_FILE)
    sys.modules[CANDIDATE_MODULE] = module
    try:
        exec(compiled, module.__dict__)  # noqa: S102 - this process exists to run untrusted code
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from candidates count too
        return None, ("import_error", type(exc).__name__, truncate(_describe(exc), MESSAGE_CHARS))
    from kbx.core.source import entry_names

    for name in entry_names(entry_name):
        entry = module.__dict__.get(name)
        if callable(entry):
            return entry, None
    return None, ("no_entry", "", f"no top-level callable named {entry_name!r} or 'kernel_function'")


def _describe(exc: BaseException) -> str:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-6))
    return tb
