"""How kernels are timed (the policy both sides share) and how timings become a speedup.

Driver-side and import-light: no torch here. The measuring itself is in `kbx.sandbox.timing`,
which runs inside the candidate's worker and inside the judge with the same policy.
"""

from __future__ import annotations

import dataclasses
import math

from kbx.core import roofline
from kbx.core.hardware import Hardware
from kbx.core.record import ShapeTiming, Status
from kbx.tasks.spec import TaskInfo

# A shape's windows, both sides summed.
WINDOW_FIELDS = ("exclusive_ms", "quiet_wait_ms", "warmup_ms", "energy_ms", "refresh_ms")
TELEMETRY_FIELDS = ("energy_per_call_mj", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
                    "throttle_reasons", "memory_used_mb")  # fmt: skip
HOST_FIELDS = ("host_cpu", "host_mhz", "host_preempted", "host_busy_pct", "host_steal_pct")  # the host during the repetitions (kbx.sandbox.hostload)
SUSPECT_SPEEDUP = 10.0  # speedups above this are flagged for review, never trusted silently
NO_PEAKS = Hardware(name="", kind="cuda")  # a GPU without a profile: no limits to check against


@dataclasses.dataclass(frozen=True)
class TimingPolicy:
    """Timing knobs, set as GPU kernel benchmarks are best measured: a cold L2 (flushed with over twice
    its size before each repetition), warm-up past Triton's JIT and autotuning, and repetitions until
    the relative standard error is small, within a time cap."""

    warmup_ms: float = 10.0  # in the window, after the prepare phase's compiling and estimating calls
    min_reps: int = 10
    # A long kernel needs fewer: the repetitions may stop at MIN_REPS_LONG (kbx.sandbox.timing) once
    # the kept ones add up to this much kernel time, if their RSE is on target.
    min_timed_ms: float = 50.0
    max_reps: int = 500
    target_rse: float = 0.01  # stop once std-err / mean of the samples is at most 1 %
    # Exclusive GPU time per perf shape and side (kernel, baseline): warm-up, repetitions and the
    # energy burst together. A shape's window is both sides: about twice this.
    side_budget_s: float = 0.5
    exclusive_grace_s: float = 1.0  # one call longer than budget + grace is measured only while sharing
    quiet_tolerance: float = 0.3  # a GPU sleep this much longer than its cycles shared the GPU
    quiet_wait_s: float = 2.0  # for other contexts' queued work to drain before a window's repetitions
    flush_l2_bytes: int = 256 * 2**20  # over twice the largest L2 of the supported GPUs (RTX 5090: 96 MB)
    rotations: int = 2  # input copies the untimed calls cycle through; every timed call gets fresh inputs
    rotation_budget_bytes: int = 4 * 2**30  # GPU memory allowed for those copies per shape
    host_slack_ms: float = 0.2  # host time may exceed event time by launch overhead, not by hidden work
    host_ratio: float = 3.0
    seed: int = 20260521  # perf inputs; the same on both sides of the comparison
    energy_burst_ms: float = 100.0  # back-to-back calls, no flush, read on NVML's energy counter
    nvml_index: int = 0  # physical GPU index for telemetry (CUDA_VISIBLE_DEVICES does not apply to NVML)


@dataclasses.dataclass(frozen=True)
class Combined:
    """The timed shapes of an attempt, turned into its speedup and the status the timing gives."""

    rows: list[ShapeTiming]
    speedup: float
    status: Status
    reason: str = ""


def combine(task: TaskInfo, kernel_rows: list[dict], baseline_rows: dict[str, dict],
            hardware: Hardware | None = None) -> Combined:  # fmt: skip
    """Per-shape timings (the kernel's rows, the baseline's rows by shape) -> rows, the geometric-mean
    speedup, and the status: `hidden_work` when the kernel's timing was not its own work alone,
    `timing_suspect` for a shape measured beyond what `hardware` (the profile of the GPU that timed
    it; None: unknown, no limits) can do or a speedup too large to trust unreviewed, else ok.

    Only shapes that both sides measured count; a shape the candidate failed on fails the
    attempt upstream of here (the worker reports it as an error row).
    """
    rows, hidden, suspect = [], "", []
    for r in kernel_rows:
        b = baseline_rows.get(r["shape"])
        if not r.get("ok") or not b or not b.get("ok"):
            continue
        row, beyond = timed_shape(r, b, hardware or NO_PEAKS, task.spec.dtypes)
        rows.append(row)
        suspect += [beyond] if beyond else []
        if r.get("hidden_work") and not hidden:
            hidden = f"shape {r['shape']}: {r['hidden_work']}"
    if not rows:
        return Combined([], math.nan, Status.OK)
    geo = math.exp(math.fsum(math.log(max(r.speedup, 1e-12)) for r in rows) / len(rows))
    if hidden:
        return Combined(rows, geo, Status.HIDDEN_WORK, hidden)
    if geo > SUSPECT_SPEEDUP:
        suspect.append(f"speedup {geo:.1f}x over eager exceeds {SUSPECT_SPEEDUP:.0f}x: flagged for review")
    if suspect:
        return Combined(rows, geo, Status.TIMING_SUSPECT, "; ".join(suspect))
    return Combined(rows, geo, Status.OK)


def timed_shape(r: dict, b: dict, hardware: Hardware, task_dtypes) -> tuple[ShapeTiming, str]:
    """One shape's kernel row `r` and baseline row `b` as a ShapeTiming, with the device's limits
    there, and why its rates pass them ("" if they do not). A row's `dtypes` are its inputs' (the
    worker's); older rows without them count at the task's."""
    ms = r["median_ms"]
    tflops = r["flops"] / (ms * 1e-3) / 1e12 if ms > 0 else 0.0
    gbps = r["bytes"] / (ms * 1e-3) / 1e9 if ms > 0 else 0.0
    bandwidth = roofline.bandwidth_limit(hardware, ms)
    compute = roofline.compute_limit(hardware, r.get("dtypes") or task_dtypes)
    row = ShapeTiming(
        shape=r["shape"],
        kernel_ms_median=ms,
        kernel_ms_iqr=r["iqr_ms"],
        baseline_ms_median=b["median_ms"],
        baseline_ms_iqr=b["iqr_ms"],
        reps=r["reps"],
        speedup=b["median_ms"] / ms if ms > 0 else math.inf,
        tflops=tflops,
        gbps=gbps,
        tflops_limit=compute.value,
        gbps_limit=bandwidth.value,
        first_call_ms=r["first_call_ms"],
        estimate_calls=int(r.get("estimate_calls", 0)),
        launch_ms=float(r.get("launch_ms", math.nan)),
        launches_per_call=float(r.get("launches_per_call", math.nan)),
        host_bound=bool(r.get("host_bound", False)),
        baseline_reps=int(b.get("reps", 0)),
        budget_cut=bool(r.get("budget_cut") or b.get("budget_cut")),
        shared=bool(r.get("shared") or b.get("shared")),
        **{k: float(r.get(k, 0.0)) + float(b.get(k, 0.0)) for k in WINDOW_FIELDS},
        contaminated_reps=int(r.get("contaminated_reps", 0)),
        telemetry=r.get("telemetry", ""),
        **{k: float(r.get(k, math.nan)) for k in TELEMETRY_FIELDS},
        host_cpu=int(r.get("host_cpu", -1)),
        host_mhz=float(r.get("host_mhz", math.nan)),
        host_preempted=int(r.get("host_preempted", -1)),
        host_busy_pct=float(r.get("host_busy_pct", math.nan)),
        host_steal_pct=float(r.get("host_steal_pct", math.nan)),
    )
    return row, roofline.beyond_the_device(r["shape"], gbps, tflops, bandwidth, compute, hardware.name)
