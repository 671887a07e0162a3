"""GPU timing, run inside the candidate's worker and inside the judge with one policy.

Per perf shape: inputs generated on the device for several rotations (distinct seeds, so no
result can be replayed by pointer or by value); a first call timed on the host (compile and
autotune); warm-up; then repetitions, each after an L2 flush, timed by CUDA events with a
device-wide synchronisation and a host wall-clock cross-check that exposes work hidden on side
streams or threads; stopping once the relative standard error is small or the time cap is hit.
Raw samples are kept; the median and IQR summarise them.

Each repetition first queues a GPU sleep (about a millisecond), then the flush, the start
event, the call and the end event, and only then synchronises: the GPU runs them back to back
while the host is still launching, so neither the launch overhead (tens of microseconds for a
Triton launcher, a few for eager PyTorch) nor the host being descheduled on a busy machine lands
inside the kernel's time, for the candidate and the baseline alike. A repetition whose launching
outlasted the sleep may hold such a gap and is measured again (a bounded number of times: an entry
that is slow on the host keeps its host time). The host cross-check compares the host window with
the GPU window that includes the sleep and the flush.
"""

from __future__ import annotations

import math
import statistics
import threading
import time

import torch

from kbx import telemetry
from kbx.eval.timing_policy import TimingPolicy
from kbx.tasks.inputs import make_generator
from kbx.worker.cases import to_plain, with_state

# Captured at import, before any candidate code runs, to notice a candidate replacing them.
_ELAPSED = torch.cuda.Event.elapsed_time
_SYNC = torch.cuda.synchronize
_CLOCK = time.perf_counter
_GPU_SLEEP = torch.cuda._sleep  # spins the GPU for a number of clock cycles
MIN_WARMUP_CALLS = 3
MIN_CAPPED_REPS = 3  # repetitions kept even when one call outlasts the time cap (slow kernels)
SLEEP_CYCLES = 2_000_000  # GPU sleep queued before each repetition: about 1 ms at the 1.5-2 GHz of current GPUs
MAX_REDONE_REPS = 20  # repetitions measured again because launching outlasted the sleep, per shape
MAX_ENERGY_CALLS = 20_000  # a burst of microsecond kernels is bounded by launch rate, not by this
_telemetry: telemetry.Telemetry | None = None


def _gpu_telemetry(index: int) -> telemetry.Telemetry:
    global _telemetry
    if _telemetry is None:
        _telemetry = telemetry.Telemetry(index)
    return _telemetry


def time_perf_shapes(entry, info, device: str, policy: dict) -> tuple[list[dict], dict]:
    """Candidate side: time every perf shape; (rows, a private copy of each shape's last timed output).

    The caller saves the outputs for the judge after reporting the rows, so writing hundreds of
    MB to a file does not hold the GPU that the next timing is waiting for."""
    pol = TimingPolicy(**policy)
    rows, outputs = [], {}
    for case in info.spec.perf:
        row, last = _time_shape(entry, info, case, device, pol, energy=case is info.spec.perf[-1])
        rows.append(row)
        if row["ok"] and info.spec.inplace:  # timed calls advanced the state: re-check one fresh call
            call = info.spec.make_inputs(case.params, make_generator(pol.seed, device), device)
            row["last_seed"] = pol.seed
            last = with_state(entry(*call.args, **call.kwargs), call.args, call.kwargs)
        if row["ok"]:
            outputs[case.name] = {"seed": row["last_seed"], "output": to_plain(last, device)}  # copied off the GPU later
        else:
            break  # a failed shape fails the attempt; timing more shapes adds nothing
    return rows, outputs


def time_reference(info, device: str, policy: dict) -> list[dict]:
    """Judge side: the live eager baseline on the same shapes, seeds and policy."""
    pol = TimingPolicy(**policy)
    with torch.no_grad():
        return [_time_shape(info.spec.reference, info, case, device, pol, energy=case is info.spec.perf[-1])[0]
                for case in info.spec.perf]  # fmt: skip


def _time_shape(fn, info, case, device: str, pol: TimingPolicy, energy: bool) -> tuple[dict, object]:
    """One shape's row (and the last timed output); `energy` adds NVML telemetry (largest shape only)."""
    spec = info.spec
    row = {"shape": case.name, "ok": False, "error": "", "median_ms": math.nan, "iqr_ms": math.nan,
           "mean_ms": math.nan, "reps": 0, "samples_ms": [], "first_call_ms": math.nan,
           "host_median_ms": math.nan, "host_suspect": "", "flops": 0.0, "bytes": 0.0, "last_seed": 0}  # fmt: skip
    try:
        calls = _rotations(spec, case, device, pol)
        first = calls[0][1]
        row["flops"] = float(spec.flops(*first.args, **first.kwargs))
        row["bytes"] = float(spec.bytes(*first.args, **first.kwargs))
        flush = torch.empty(pol.flush_l2_bytes // 4, dtype=torch.int32, device=device)
        threads_before = threading.active_count()

        def run(i):  # no cloning here: a copy inside the timed region would be timed too
            seed, call = calls[i % len(calls)]
            return seed, fn(*call.args, **call.kwargs)

        _SYNC()
        t0 = _CLOCK()
        run(0)
        _SYNC()
        row["first_call_ms"] = (_CLOCK() - t0) * 1e3
        warm_until, n = _CLOCK() + pol.warmup_ms * 1e-3, 0
        while n < MIN_WARMUP_CALLS or _CLOCK() < warm_until:
            run(n)
            _SYNC()  # else a slow kernel queues warmup_ms of launches: minutes of GPU work
            n += 1
        samples, host_excess, last = _measure(run, flush, pol)
        row.update(_summary(samples, host_excess, pol))
        skipped = {"telemetry": "read on the largest perf shape only"}
        per_call_ms = max(row["median_ms"], row["host_median_ms"])  # events can miss work on other streams
        row.update(_energy(run, pol, per_call_ms) if energy else skipped)
        row["last_seed"], row["ok"] = last[0], True
        if threading.active_count() > threads_before:
            row["host_suspect"] = "the entry started background threads"
        if torch.cuda.Event.elapsed_time is not _ELAPSED or torch.cuda.synchronize is not _SYNC:
            row["host_suspect"] = "timing functions were replaced during the run"
        return row, last[1]
    except Exception as exc:  # a shape that fails is reported as such, never skipped silently
        row["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        return row, None


def _rotations(spec, case, device: str, pol: TimingPolicy) -> list:
    first = spec.make_inputs(case.params, make_generator(pol.seed, device), device)
    size = sum(t.numel() * t.element_size() for t in _tensors(first))
    count = max(1, min(pol.rotations, pol.rotation_budget_bytes // max(size, 1)))
    calls = [(pol.seed, first)]
    for r in range(1, count):
        calls.append((pol.seed + r, spec.make_inputs(case.params, make_generator(pol.seed + r, device), device)))
    return calls


def _measure(run, flush, pol: TimingPolicy):
    """Repetitions until the RSE target (after `min_reps`) or the time cap (after MIN_CAPPED_REPS):
    (event samples ms, host-minus-GPU-window ms per repetition, last output)."""
    samples, host_excess = [], []
    deadline = _CLOCK() + pol.max_time_per_shape_s
    last, redone = None, 0
    for i in range(pol.max_reps + MAX_REDONE_REPS):
        _SYNC()
        before, slept, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(4))
        h0 = _CLOCK()
        before.record()
        _GPU_SLEEP(SLEEP_CYCLES)
        slept.record()
        flush.zero_()
        start.record()
        last = run(i)
        end.record()
        launching_ms = (_CLOCK() - h0) * 1e3
        _SYNC()
        host_ms = (_CLOCK() - h0) * 1e3
        if launching_ms > _ELAPSED(before, slept) and redone < MAX_REDONE_REPS:
            redone += 1  # the GPU may have idled waiting for this launch: not a clean sample
            continue
        samples.append(_ELAPSED(start, end))
        host_excess.append(host_ms - _ELAPSED(before, end))
        enough = len(samples) >= pol.min_reps and _rse(samples) <= pol.target_rse
        if enough or len(samples) >= pol.max_reps or (len(samples) >= MIN_CAPPED_REPS and _CLOCK() > deadline):
            break
    return samples, host_excess, last


def _energy(run, pol: TimingPolicy, median_ms: float) -> dict:
    """Telemetry over a burst of back-to-back calls (no L2 flush, whose energy is not the kernel's)
    lasting about energy_burst_ms on the GPU: the call count comes from the measured time per call,
    since launching for energy_burst_ms of host time would queue far more work than that for a slow
    kernel. That time must be the host's where it is longer: a kernel hiding its work from the CUDA
    events (a side stream) once got 20,000 calls of 20 ms each, minutes of GPU held."""
    if pol.energy_burst_ms <= 0:
        return {"telemetry": "disabled"}
    meter = _gpu_telemetry(pol.nvml_index)
    calls = energy_calls(pol, median_ms)
    _SYNC()
    before = meter.snapshot()
    for i in range(calls):
        run(i)
    _SYNC()
    return telemetry.around(before, meter.snapshot(), calls)


def energy_calls(pol: TimingPolicy, per_call_ms: float) -> int:
    """Calls in an energy burst of about `pol.energy_burst_ms`, at most MAX_ENERGY_CALLS."""
    return int(min(MAX_ENERGY_CALLS, max(1, math.ceil(pol.energy_burst_ms / max(per_call_ms, 1e-6)))))


def _summary(samples: list[float], host_excess: list[float], pol: TimingPolicy) -> dict:
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    median, excess = statistics.median(samples), statistics.median(host_excess)
    suspect = ""
    if excess > max((pol.host_ratio - 1) * median, pol.host_slack_ms):
        suspect = (f"host wall time exceeds the GPU's by {excess:.3f} ms per call against a CUDA-event time "
                   f"of {median:.3f} ms: work ran outside the timed stream")  # fmt: skip
    return {"median_ms": median, "iqr_ms": q[2] - q[0], "mean_ms": statistics.fmean(samples), "reps": len(samples),
            "samples_ms": samples, "host_median_ms": median + excess, "host_suspect": suspect}  # fmt: skip


def _rse(samples: list[float]) -> float:
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / math.sqrt(len(samples)) / mean if mean > 0 else 0.0


def _tensors(call):
    for v in [*call.args, *call.kwargs.values()]:
        if isinstance(v, torch.Tensor):
            yield v
