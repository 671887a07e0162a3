"""Evaluation results as plain data: a status enum and one immutable record per attempt.

Records hold no exceptions and no None: absent numbers are NaN (with a boolean saying why),
absent text is "". Units are in field names. `to_dict` gives JSON-ready values.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


class Status(str, enum.Enum):
    """Outcome of one attempt, ordered roughly by the stage that decides it."""

    OK = "ok"
    NO_CODE = "no_code"
    # The LLM's answer stopped at its token limit (llm.max_tokens, or the server's context window) before
    # its code was complete: not judged, and not a syntax error. Counted against the method (under its settings).
    TRUNCATED = "truncated"
    # Every LLM call for the task failed (HTTP error, timeout, server gone, prompt over the context window):
    # no kernel to judge. kbx's side, like harness_error: left out of the rates, and redone on resume.
    LLM_ERROR = "llm_error"
    UNKNOWN_TASK = "unknown_task"
    SYNTAX_ERROR = "syntax_error"
    NO_ENTRY = "no_entry"
    IMPORT_ERROR = "import_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    OUT_OF_MEMORY = "out_of_memory"
    NO_TRITON = "no_triton"
    DECOY_KERNEL = "decoy_kernel"
    MISMATCH = "mismatch"
    INPUT_MUTATED = "input_mutated"
    UNWRITTEN_OUTPUT = "unwritten_output"
    WRONG_DTYPE = "wrong_dtype"
    WRONG_SHAPE = "wrong_shape"
    WRONG_TYPE = "wrong_type"
    TIMING_SUSPECT = "timing_suspect"  # correct, with a speedup too large to trust unreviewed
    HIDDEN_WORK = "hidden_work"  # its timing was not its work alone: threads, streams or processes of its own
    # It reached for kbx's own answers (an expert kernel, kbx.experts, methods' code; kbx.sandbox.answers)
    BORROWED_ANSWER = "borrowed_answer"
    REPLAYED_RESULT = "replayed_result"  # inputs it had seen were answered from memory, not computed
    UNSUPPORTED_ON_CPU = "unsupported_on_cpu"
    REFERENCE_ERROR = "reference_error"
    HARNESS_ERROR = "harness_error"  # kbx's own machinery failed (judge, worker set-up, sandbox): no verdict
    QUARANTINED = "quarantined"  # in flight twice when the driver died: skipped so the job can finish

    @property
    def judged(self) -> bool:
        """A verdict on the kernel exists. Harness failures, quarantined attempts and tasks the LLM
        never answered are counted apart and left out of compile, correctness and speedup rates."""
        return self not in (Status.HARNESS_ERROR, Status.QUARANTINED, Status.LLM_ERROR)

    @property
    def compiled(self) -> bool:
        """The code imported and its entry exists (upstream's 'call' stage, kbx's 'compiled')."""
        return self not in _NOT_COMPILED

    @property
    def correct(self) -> bool:
        return self in (Status.OK, Status.TIMING_SUSPECT)


_NOT_COMPILED = {
    Status.NO_CODE,
    Status.TRUNCATED,
    Status.LLM_ERROR,
    Status.UNKNOWN_TASK,
    Status.SYNTAX_ERROR,
    Status.NO_ENTRY,
    Status.IMPORT_ERROR,
    Status.REFERENCE_ERROR,
    Status.HARNESS_ERROR,
    Status.QUARANTINED,
}

NAN = float("nan")
# A judge's verdict fields that a record carries as they are (kbx.sandbox.judging.Verdict).
VERDICT_FIELDS = ("error_type", "message", "cases_total", "cases_passed", "extra_cases_failed", "extra_reason")
MESSAGE_CHARS = 2000  # longest error message kept in a record
OUTPUT_TAIL_CHARS = 4000  # longest tail of the candidate's stdout/stderr kept


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """Where a candidate's output differs from the reference, for feedback and debugging."""

    case: str = ""
    seed: int = 0
    leaf: str = ""  # path inside the output structure, e.g. "[1]"
    count: int = 0
    numel: int = 0
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    indices: tuple = ()  # first few differing indices
    got: tuple = ()
    expected: tuple = ()


@dataclasses.dataclass(frozen=True)
class ShapeTiming:
    """One perf shape timed for the candidate and the live reference baseline."""

    shape: str
    kernel_ms_median: float
    kernel_ms_iqr: float
    baseline_ms_median: float
    baseline_ms_iqr: float
    reps: int  # the kernel's repetitions (samples behind the median)
    speedup: float
    tflops: float
    gbps: float
    # The most this device can do at this shape (kbx.core.roofline); NaN where its profile has no peaks
    tflops_limit: float = NAN
    gbps_limit: float = NAN
    baseline_reps: int = 0
    budget_cut: bool = False  # a side's repetitions stopped at the timing budget, before the RSE target
    shared: bool = False  # one call outlasted the exclusive budget: timed once while sharing the GPU (slower)
    exclusive_ms: float = 0.0  # the GPU held alone for this shape (kernel and baseline windows)
    # Of exclusive_ms, both sides summed: waiting for work other processes had queued to drain, warming up,
    # and the energy burst with its telemetry reads; the rest is the repetitions (calls, sleeps, flushes).
    quiet_wait_ms: float = 0.0
    warmup_ms: float = 0.0
    energy_ms: float = 0.0
    refresh_ms: float = 0.0  # giving every repetition fresh inputs (outside its events), both sides summed
    contaminated_reps: int = 0  # repetitions not counted: another context's work shared the GPU
    first_call_ms: float = NAN  # includes JIT compilation and autotuning
    estimate_calls: int = 0  # calls that estimated one call's time: more than 1 when a freeze fell inside one
    # The host's time to launch one call (median), and whether launching outlasted the GPU's head start in
    # every repetition: such a call's time is the host's launch rate (it follows the host's load), not the GPU's.
    launch_ms: float = NAN
    host_bound: bool = False
    launches_per_call: float = NAN  # Triton launches of one call (its estimating calls', averaged; NaN: not counted)
    telemetry: str = ""  # why telemetry is missing, "" when present
    energy_per_call_mj: float = NAN
    power_w: float = NAN
    sm_clock_mhz: float = NAN
    mem_clock_mhz: float = NAN
    temperature_c: float = NAN
    throttle_reasons: float = NAN  # NVML clocks-event bitmask (0: not throttled)
    memory_used_mb: float = NAN
    # The host during the kernel's repetitions (kbx.sandbox.hostload): the core the timed process ran on, its
    # clock, how often the process was preempted, how busy all the host's cores were and, of that, the share a
    # hypervisor gave to other guests (-1 / NaN: unknown).
    host_cpu: int = -1
    host_mhz: float = NAN
    host_preempted: int = -1
    host_busy_pct: float = NAN
    host_steal_pct: float = NAN


@dataclasses.dataclass(frozen=True)
class EvalRecord:
    """The verdict on one attempt at one task."""

    task: str
    task_version: int
    status: Status
    reason: str = ""
    error_type: str = ""
    message: str = ""
    label: str = ""  # who produced the code, e.g. "reference", "predictions:line12", "round1/cand3"
    cases_total: int = 0
    cases_passed: int = 0
    extra_cases_failed: int = 0  # kbx's own cases beyond upstream's contract (Case.extra): reported, never the status
    extra_reason: str = ""  # the first failing extra case and why
    triton_launches: int = 0
    mismatch: Mismatch = dataclasses.field(default_factory=Mismatch)
    timed: bool = False
    timing_skipped_reason: str = ""
    speedup: float = NAN  # geometric mean over perf shapes of baseline_ms / kernel_ms
    runtime_ms: float = NAN  # sum over perf shapes of the candidate's median
    baseline_ms: float = NAN  # sum over perf shapes of the reference's median
    shapes: tuple[ShapeTiming, ...] = ()
    # from the attempt's start to its check's: the worker's spawn, and waiting for device memory or for an
    # exclusive window to end (a check never starts inside one)
    start_s: float = 0.0
    sandbox_s: float = 0.0  # entering the sandbox: namespaces, mounts, two forks (kbx.sandbox.namespaces)
    inputs_s: float = 0.0  # making the correctness cases' inputs, the worker's first CUDA call (its context) included
    compile_s: float = 0.0  # importing the candidate (Triton JIT happens at its first call, in check_s)
    check_s: float = 0.0  # running every correctness case, ghost replay included
    judge_s: float = 0.0  # the judge's reference and comparison
    judge_perf_s: float = 0.0  # of judge_s: checking the perf shapes' outputs (the largest, read from host memory)
    judge_wait_s: float = 0.0  # of judge_s: waiting for an idle judge (every one busy with other attempts)
    time_s: float = 0.0  # timing every perf shape: preparing (GPU shared) and measuring (GPU alone)
    save_s: float = 0.0  # of time_s: the worker writing the perf shapes' outputs for that check (host memory)
    paused_s: float = 0.0  # frozen while other attempts held the GPU alone (excluded from every deadline)
    gpu_wait_s: float = 0.0  # waiting for exclusive windows
    baseline_s: float = 0.0  # timing the reference for this attempt (0: an earlier attempt of the run did)
    exclusive_s: float = 0.0  # the GPU held alone for this attempt, all its windows (kernel and baseline)
    max_window_s: float = 0.0  # its longest single exclusive window
    wall_s: float = 0.0  # the whole attempt as the driver saw it
    redone_s: float = 0.0  # of wall_s: the tries redone before the last (kbx's failures, out of memory beside others)
    output_tail: str = ""
    device: str = ""
    gpu_index: int = -1  # the physical GPU (NVML index) it was judged and timed on; -1 on a CPU
    gpu_uuid: str = ""  # ...and that GPU's UUID, which no renumbering changes
    sandbox: str = ""  # the isolation the candidate ran under: "namespaces" or "none" (kbx.sandbox.namespaces)
    # What judged it (kbx.core.provenance): kbx's commit ("kbx VERSION" outside a checkout), torch, triton, and on a
    # GPU its NVIDIA driver and the CUDA runtime torch ships ("" on a CPU, or where no GPU judged the attempt)
    kbx_commit: str = ""
    torch_version: str = ""
    triton_version: str = ""
    nvidia_driver_version: str = ""
    cuda_runtime_version: str = ""
    harness_retries: int = 0  # attempts redone after a failure of kbx's own machinery
    harness_failures: tuple[str, ...] = ()  # why each redone try was kbx's failure, in order (one line each)

    @property
    def compiled(self) -> bool:
        return self.status.compiled

    @property
    def correct(self) -> bool:
        return self.status.correct

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["status"] = self.status.value
        out["compiled"] = self.compiled
        out["correct"] = self.correct
        return _json_safe(out)


def _json_safe(value: Any) -> Any:
    """NaN and inf become None (JSON null); tuples become lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def truncate(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Keep the head and tail of long text; errors and tracebacks matter at both ends."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} chars cut] ...\n{text[-half:]}"
