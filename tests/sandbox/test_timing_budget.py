"""The timing budget, on a fake GPU driven by a fake clock: whatever a kernel's speed, a side's
exclusive time stays within its budget plus one call, and a kernel too slow for a window is not
measured alone. The real measuring loop runs; only the CUDA calls are replaced."""

from __future__ import annotations

import statistics

import pytest
import torch

from kbx.contract.timing_policy import TimingPolicy
from kbx.sandbox import timing

CLOCK_MHZ = 1000.0  # the fake GPU's SM clock: a sleep of N cycles takes N / 1e6 ms... per MHz


LATE_MS = 5.0  # a host hiccup while launching: longer than the 2 ms head start a repetition's sleep gives


class FakeGpu:
    """A host clock and a GPU timeline: a launch costs the host LAUNCH_MS and queues work on the
    GPU; an event records the GPU's time once the work before it is done; a stream sync waits for
    this stream, a device sync also for the process's other streams (`own_tail_ms` of hidden work
    per call). `foreign_ms(host_s)` is the time slice another context takes before this stream's
    work runs, whenever the stream was idle."""

    LAUNCH_MS = 0.005

    def __init__(self, kernel_ms: float, foreign=lambda host_s: 0.0, own_tail_ms: float = 0.0, launches: int = 1,
                 late_calls: tuple[int, ...] = ()) -> None:  # fmt: skip
        self.host = 0.0
        self.gpu = 0.0
        self.kernel_ms = kernel_ms
        self.foreign = foreign
        self.own_tail_ms = own_tail_ms
        self.hidden_until = 0.0
        self.launches = launches  # kernels per call, each LAUNCH_MS of host time: many make the host the limit
        self.late_calls = late_calls  # calls (by index) the host starts launching LATE_MS late, as if descheduled
        self.calls = 0
        self.sleeps: list[int] = []  # cycles of each GPU sleep queued, probes included

    @property
    def now(self) -> float:
        return self.host

    def clock(self) -> float:
        return self.host

    def launch(self, gpu_ms: float) -> None:
        self.host += self.LAUNCH_MS * 1e-3
        if self.gpu <= self.host:  # the stream was idle: another context may hold the GPU first
            self.gpu = self.host + self.foreign(self.host) * 1e-3
        self.gpu += gpu_ms * 1e-3

    def stream_sync(self) -> None:
        self.host = max(self.host, self.gpu)

    def device_sync(self) -> None:
        self.host = max(self.host, self.gpu, self.hidden_until)

    def advance_ms(self, ms: float) -> None:
        self.host += ms * 1e-3

    def sleep(self, cycles: int) -> None:
        self.sleeps.append(cycles)
        self.launch(cycles / (CLOCK_MHZ * 1e3))

    def event(self, enable_timing: bool = True):
        gpu = self

        class Event:
            def record(self):
                gpu.launch(0.0)
                self.t = gpu.gpu

        return Event()

    def kernel(self, *args, **kwargs):
        if self.calls in self.late_calls:
            self.advance_ms(LATE_MS)
        self.calls += 1
        for _ in range(self.launches):
            self.launch(self.kernel_ms / self.launches)
        self.hidden_until = self.gpu + self.own_tail_ms * 1e-3  # side-stream work that outlives the call
        return torch.zeros(1)


class FakeTelemetry:
    handle = object()

    def sm_clock_mhz(self) -> float:
        return CLOCK_MHZ


@pytest.fixture
def fake_gpu(monkeypatch):
    def install(kernel_ms: float, foreign=lambda host_s: 0.0, own_tail_ms: float = 0.0, **calls) -> FakeGpu:
        gpu = FakeGpu(kernel_ms, foreign, own_tail_ms, **calls)
        monkeypatch.setattr(timing, "_CLOCK", gpu.clock)
        monkeypatch.setattr(timing, "_EVENT", gpu.event)
        monkeypatch.setattr(timing, "_ELAPSED", lambda a, b: (b.t - a.t) * 1e3)
        monkeypatch.setattr(timing, "_SYNC", gpu.device_sync)
        monkeypatch.setattr(timing, "_STREAM_SYNC", gpu.stream_sync)
        monkeypatch.setattr(timing, "_GPU_SLEEP", gpu.sleep)
        monkeypatch.setattr(timing, "_ORIGINAL_ELAPSED", torch.cuda.Event.elapsed_time)
        monkeypatch.setattr(timing, "_ORIGINAL_SYNC", torch.cuda.synchronize)
        monkeypatch.setattr(timing, "_telemetry", FakeTelemetry())
        monkeypatch.setattr(timing.time, "sleep", lambda s: gpu.advance_ms(s * 1e3))
        return gpu

    return install


def _prepared(gpu: FakeGpu) -> timing.Prepared:
    row = timing.empty_row("perf")
    row["estimate_ms"] = gpu.kernel_ms
    return timing.Prepared(gpu.kernel, None, [(1, None)], torch.zeros(4), row, (1, torch.zeros(1)))


@pytest.fixture(autouse=True)
def _calls_without_args(monkeypatch):
    """The fake GPU's kernel takes no inputs: a call runs it, a refresh only hands out the next seed."""
    seeds = iter(range(1, 1 << 30))
    monkeypatch.setattr(timing.Prepared, "run", lambda self, i: (1, self.fn()))
    monkeypatch.setattr(timing.Prepared, "refresh", lambda self, i: next(seeds))


POLICY = TimingPolicy(energy_burst_ms=0.0)


@pytest.mark.parametrize("kernel_ms", [0.005, 0.3, 7.0, 120.0, 260.0, 499.0, 900.0, 1400.0])
def test_a_side_never_holds_the_gpu_past_its_budget_plus_one_call(fake_gpu, kernel_ms):
    gpu = fake_gpu(kernel_ms)
    started = gpu.now
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    gpu.device_sync()
    held_s = gpu.now - started
    one_call_s = (kernel_ms + timing.SLEEP_CYCLES / (CLOCK_MHZ * 1e3)) * 1e-3
    assert row["ok"] and row["reps"] >= 1 and not row["shared"]
    assert held_s <= POLICY.side_budget_s + one_call_s
    assert held_s <= POLICY.side_budget_s + POLICY.exclusive_grace_s + 0.01
    assert row["exclusive_ms"] == pytest.approx(held_s * 1e3)
    assert row["median_ms"] == pytest.approx(kernel_ms)


def test_a_fast_kernel_stops_at_the_rse_target_long_before_the_budget(fake_gpu):
    gpu = fake_gpu(0.01)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["reps"] == POLICY.min_reps and not row["budget_cut"]
    assert row["exclusive_ms"] < 0.1 * POLICY.side_budget_s * 1e3
    assert row["host_cpu"] >= 0 and row["host_preempted"] >= 0  # the host over the repetitions (kbx.sandbox.hostload)


def test_a_slow_kernel_gets_the_few_repetitions_its_verdict_needs(fake_gpu):
    gpu = fake_gpu(200.0)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert 1 <= row["reps"] <= 3 and row["budget_cut"]


def test_a_steady_long_kernel_stops_once_its_repetitions_cover_the_minimum_time(fake_gpu):
    gpu = fake_gpu(30.0)  # steady: every call the same
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["reps"] == timing.MIN_REPS_LONG and not row["budget_cut"]
    assert row["reps"] * 30.0 >= POLICY.min_timed_ms
    assert row["exclusive_ms"] <= (row["reps"] + 2) * 32.0 + 5.0  # the repetitions, one warm-up call, the repeat probe


def test_a_kernel_too_slow_for_a_window_is_not_measured_alone(fake_gpu):
    gpu = fake_gpu(5000.0)
    started = gpu.now
    row, out = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert gpu.now == started  # no GPU time at all in the exclusive phase
    assert row["shared"] and row["budget_cut"] and row["median_ms"] == 5000.0 and out is not None


def _repetitions(gpu: FakeGpu) -> timing.Repetitions:
    call_s = (gpu.kernel_ms + timing.SLEEP_CYCLES / (CLOCK_MHZ * 1e3)) * 1e-3
    return timing._repetitions(_prepared(gpu), POLICY, timing.Budget(POLICY.side_budget_s, call_s, gpu.clock))


def test_a_repetition_the_host_launched_late_is_measured_again(fake_gpu):
    gpu = fake_gpu(0.3, late_calls=(0,))
    reps = _repetitions(gpu)
    assert gpu.calls == len(reps.samples) + 1 and not reps.host_bound
    assert max(reps.samples) == pytest.approx(0.3)  # the late call's GPU gap is in no sample


def test_a_call_bound_by_the_hosts_launch_rate_keeps_its_repetitions(fake_gpu):
    """2,000 kernels a call, each launched in 5 us: every call's launching outlasts the sleep's 2 ms head
    start, which would also hide 2 ms of it from the events. Measuring it again cannot help; after
    HOST_BOUND_REPS such repetitions in a row the rest run without the sleep and are kept, and the time is
    the host's rate, GPU gaps and all. (Redone up to MAX_REDONE_REPS times each, such a shape got 2
    repetitions on an H200: LinearAlgebra/ldl_factor n1024, 2026-12-01.)"""
    launches = 2000
    gpu = fake_gpu(1.0, launches=launches)
    reps = _repetitions(gpu)
    launch_ms = launches * FakeGpu.LAUNCH_MS
    assert reps.host_bound and gpu.calls - len(reps.samples) == timing.HOST_BOUND_REPS
    assert statistics.median(reps.launch_ms) == pytest.approx(launch_ms, rel=0.01)
    assert statistics.median(reps.samples) == pytest.approx(launch_ms, rel=0.05)
    row, _ = timing.measure_shape(_prepared(fake_gpu(1.0, launches=launches)), POLICY, energy=False)
    assert row["host_bound"] and row["launch_ms"] == pytest.approx(launch_ms, rel=0.01)


def test_a_call_too_long_to_be_measured_again_is_host_bound_when_its_launching_outlasted_the_sleep(fake_gpu):
    """400 ms of launching a call: the budget leaves no room to measure it again, so it is kept (its
    sleep hid 2 ms of the launching) and the row says the time is the host's."""
    row, _ = timing.measure_shape(_prepared(fake_gpu(1.0, launches=80_000)), POLICY, energy=False)
    assert row["ok"] and row["reps"] <= 2 and row["host_bound"]
    assert row["launch_ms"] == pytest.approx(400.0, rel=0.01)
    gpu_bound, _ = timing.measure_shape(_prepared(fake_gpu(300.0)), POLICY, energy=False)
    assert gpu_bound["reps"] <= 2 and not gpu_bound["host_bound"]


def test_a_fast_kernels_repetitions_sleep_a_few_times_its_launching_not_the_longest_sleep(fake_gpu):
    """Launched in 5 us, a 10 us kernel's repetitions need no 1 ms head start: the sleep is sized from the
    warm-up's launching (MIN_SLEEP_MS here), so its window is a fraction of what fixed sleeps made it."""
    gpu = fake_gpu(0.01)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False, check=False)  # no repeat probe
    rep_sleeps = [c for c in gpu.sleeps if c != timing.PROBE_CYCLES]
    assert len(rep_sleeps) == row["reps"] == POLICY.min_reps and row["contaminated_reps"] == 0
    assert rep_sleeps == [pytest.approx(timing.sleep_cycles_for(FakeGpu.LAUNCH_MS), abs=1)] * row["reps"]
    assert row["exclusive_ms"] < row["reps"] * timing.SLEEP_CYCLES / (CLOCK_MHZ * 1e3)
    assert row["median_ms"] == pytest.approx(0.01)


def test_a_launch_that_outlasts_a_short_sleep_gets_a_longer_one_and_is_not_host_bound(fake_gpu):
    """A host hiccup (LATE_MS) during one repetition's launching outlasts its short sleep: that repetition
    is measured again after a sleep twice as long, and the shape is not taken for host-bound."""
    dry = fake_gpu(0.3)
    row, _ = timing.measure_shape(_prepared(dry), POLICY, energy=False, check=False)  # no repeat probe
    warm_ups = dry.calls - row["reps"]
    gpu = fake_gpu(0.3, late_calls=(warm_ups + 2,))  # the third repetition's launch is late (warm-ups as above)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False, check=False)
    rep_sleeps = [c for c in gpu.sleeps if c != timing.PROBE_CYCLES]
    short = timing.sleep_cycles_for(FakeGpu.LAUNCH_MS)
    assert rep_sleeps[:4] == pytest.approx([short, short, short, 2 * short], abs=2) and not row["host_bound"]
    assert row["reps"] == gpu.calls - warm_ups - 1 and max(row["samples_ms"]) == pytest.approx(0.3)


@pytest.mark.parametrize("launch_ms, cycles", [(float("nan"), timing.SLEEP_CYCLES), (0.0, 300_000),
                                               (0.2, 1_500_000), (5.0, timing.SLEEP_CYCLES)])  # fmt: skip
def test_the_sleep_covers_the_launching_at_any_clock_within_the_longest_sleep(launch_ms, cycles):
    assert timing.sleep_cycles_for(launch_ms) == cycles


TIME_SLICE_MS = 2.3  # what another context's turn on the GPU cost each call on an H100


def test_the_window_waits_for_a_frozen_neighbours_queue_to_drain(fake_gpu):
    """Work a frozen process had queued keeps the GPU busy for a while: the events of a probe
    would not show it (it runs before them), the host's time does."""
    drained_at_s = 0.05
    gpu = fake_gpu(0.05, foreign=lambda host_s: TIME_SLICE_MS if host_s < drained_at_s else 0.0)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["quiet"] and row["quiet_wait_ms"] >= drained_at_s * 1e3
    assert row["contaminated_reps"] == 0 and not row["hidden_work"]
    assert row["median_ms"] == pytest.approx(0.05)


def test_a_window_says_where_its_time_went(fake_gpu, monkeypatch):
    """Draining others' queued work, warming up and the energy burst are recorded apart from the repetitions,
    so a suite's windows can be split (kbx.bench.window_split): on an H100 (2026-12-05) the timed calls were
    31.7 s of 105.7 s of windows, and the rest was not attributed."""
    drained_at_s, burst_ms = 0.02, 40.0
    gpu = fake_gpu(0.05, foreign=lambda host_s: TIME_SLICE_MS if host_s < drained_at_s else 0.0)
    monkeypatch.setattr(timing, "_energy", lambda *args: (gpu.advance_ms(burst_ms), {})[1])
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=True)
    assert row["quiet_wait_ms"] >= drained_at_s * 1e3 and row["warmup_ms"] >= POLICY.warmup_ms
    assert row["energy_ms"] == pytest.approx(burst_ms)
    parts = row["quiet_wait_ms"] + row["warmup_ms"] + row["energy_ms"] + row["reps"] * row["median_ms"]
    assert parts <= row["exclusive_ms"]


def test_the_window_is_not_fooled_by_a_queue_that_yields_to_a_probe_after_a_pause(fake_gpu):
    """As measured on an H200 (kbx.sandbox.timing.QUIET_BURST): while a frozen process's queue drains, the GPU
    gives this context its turn at once when it comes back after a pause, so one probe after each poll
    looks quiet; work that follows its own end straight away waits for the other context's time slice."""
    drained_at_s, last_end = 0.05, {"host_s": -1.0}

    def yields_after_a_pause(host_s):
        paused = host_s - last_end["host_s"] >= timing.QUIET_POLL_S
        last_end["host_s"] = host_s
        return 0.0 if host_s >= drained_at_s or paused else TIME_SLICE_MS

    gpu = fake_gpu(0.05, foreign=yields_after_a_pause)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["quiet"] and row["quiet_wait_ms"] >= drained_at_s * 1e3
    assert row["contaminated_reps"] == 0 and not row["hidden_work"]


def test_another_context_busy_through_the_window_is_no_timing_and_not_the_kernels_fault(fake_gpu):
    gpu = fake_gpu(0.05, foreign=lambda host_s: TIME_SLICE_MS)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert not row["quiet"] and row["hidden_work"] == ""  # the driver redoes it: kbx's failure, not the kernel's
    assert row["contaminated_reps"] == row["reps"]


def test_the_kernels_own_hidden_work_is_reported_for_the_attempt_to_confirm(fake_gpu):
    """Work on its own side stream that outlives every call: the device sync waits for it and the GPU
    is otherwise quiet, so it is most likely the kernel's own doing. Not surely (a host too busy to run
    the timed process looks the same), so the row reports it and the attempt charges it only when every
    try shows it (tests/driver/test_harness_faults.py)."""
    gpu = fake_gpu(0.05, own_tail_ms=3.0)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["quiet"] and row["hidden_unconfirmed"].startswith("host wall time exceeds the GPU's")
    assert row["hidden_work"] == ""


def test_own_hidden_work_hidden_under_a_long_kernel_is_still_caught(fake_gpu):
    gpu = fake_gpu(20.0, own_tail_ms=5.0)  # 5 ms is within the host-ratio slack of a 20 ms kernel
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["quiet"] and row["hidden_unconfirmed"].startswith("every repetition ran work outside the timed")
    assert row["hidden_work"] == ""


def test_a_clean_timing_reports_nothing_to_confirm(fake_gpu):
    gpu = fake_gpu(20.0)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["quiet"] and row["hidden_unconfirmed"] == "" and row["hidden_work"] == ""


def test_a_time_slice_beyond_a_long_call_is_no_hidden_work(fake_gpu):
    """A 443 ms call whose every repetition took 2.3 ms more on the host (0.5 %): too little to be worth
    hiding (a GEAK fused_qr_solve kernel was charged for it on an H100, and ok on the line before)."""
    gpu = fake_gpu(443.0, own_tail_ms=TIME_SLICE_MS)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["quiet"] and not row["hidden_work"] and row["contaminated_reps"] == row["reps"]


def test_repetitions_that_shared_the_gpu_are_not_counted(fake_gpu):
    calls = {"n": 0}

    def every_third(host_s):  # after the window's opening probes, which found the GPU quiet
        calls["n"] += 1
        return TIME_SLICE_MS if calls["n"] > timing.QUIET_BURST and calls["n"] % 3 == 0 else 0.0

    gpu = fake_gpu(0.05, foreign=every_third)
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["contaminated_reps"] > 0 and row["quiet"] and not row["hidden_work"]
    assert row["median_ms"] == pytest.approx(0.05)


QUIET = [True] * timing.QUIET_BURST  # a burst of probes that finds the GPU quiet


@pytest.mark.parametrize("probes, busy", [([False, *QUIET], False), ([False] * timing.BUSY_PROBES, True)])
def test_the_gpu_counts_busy_after_the_repetitions_only_if_every_burst_says_so(fake_gpu, monkeypatch, probes, busy):
    """One slow probe is a host hiccup (one in 100 took 8.7 ms on an idle H100 host), not another
    context's work, which delays one of every burst; a busy GPU sends the attempt to be redone or charged."""
    gpu = fake_gpu(443.0, own_tail_ms=TIME_SLICE_MS)  # every repetition contaminated, by a sliver of a call
    answers = iter(QUIET + probes)  # the window's opening wait, then the probes after the repetitions
    monkeypatch.setattr(timing, "gpu_is_quiet", lambda pol: next(answers))
    row, _ = timing.measure_shape(_prepared(gpu), POLICY, energy=False)
    assert row["contaminated_reps"] == row["reps"] and not row["hidden_work"]
    assert row["quiet"] is not busy


class FreezingKernel:
    """The fake GPU's kernel, during whose first `frozen_calls` calls the driver froze the worker for
    another attempt's window: the host stood still FREEZE_MS between the launch and the end event,
    then was resumed (SIGCONT, counted as kbx.sandbox.resumes counts it)."""

    FREEZE_MS = 2000.0

    def __init__(self, gpu: FakeGpu, frozen_calls: int) -> None:
        self.gpu, self.frozen_calls, self.calls, self.resumes = gpu, frozen_calls, 0, 0

    def __call__(self):
        out = self.gpu.kernel()
        self.calls += 1
        if self.calls <= self.frozen_calls:
            self.gpu.advance_ms(self.FREEZE_MS)
            self.resumes += 1
        return out


@pytest.mark.parametrize("frozen_calls, calls", [(0, 1), (1, 2), (2, 3)])
def test_an_estimate_made_across_a_freeze_is_made_again(fake_gpu, monkeypatch, frozen_calls, calls):
    """A 450 ms kernel (an H100's LinearAlgebra/qr at n4096) frozen 2 s for another attempt's window
    during its estimate looks 2 s long: too long to be timed alone (1.5 s), and recorded at that."""
    gpu = fake_gpu(450.0)
    kernel = FreezingKernel(gpu, frozen_calls)
    monkeypatch.setattr(timing, "_RESUMES", lambda: kernel.resumes)
    prepared = timing.Prepared(kernel, None, [(1, None)], None, timing.empty_row("perf"))
    estimate_ms, made, _ = timing._estimate_one_call(prepared)
    assert made == calls == kernel.calls
    assert estimate_ms == pytest.approx(450.0, rel=1e-3)
    assert timing.alone_allowed(estimate_ms, POLICY)


def test_an_estimate_frozen_every_time_stops_after_its_calls(fake_gpu, monkeypatch):
    gpu = fake_gpu(450.0)
    kernel = FreezingKernel(gpu, frozen_calls=10)
    monkeypatch.setattr(timing, "_RESUMES", lambda: kernel.resumes)
    prepared = timing.Prepared(kernel, None, [(1, None)], None, timing.empty_row("perf"))
    estimate_ms, made, _ = timing._estimate_one_call(prepared)
    assert made == kernel.calls == timing.ESTIMATE_CALLS
    assert estimate_ms == pytest.approx(FreezingKernel.FREEZE_MS, rel=1e-3)  # the kernel ran during the freeze


RESUME_COUNTER = """
import sys, time
from kbx.sandbox import resumes
resumes.install()
print("ready", flush=True)
deadline = time.monotonic() + 20
while resumes.count() == 0 and time.monotonic() < deadline:
    time.sleep(0.01)
print(resumes.count(), flush=True)
"""


def test_a_worker_counts_the_sigcont_that_ends_a_freeze():
    """The freezer's real signals: SIGSTOP (uncatchable), then SIGCONT, which the worker counts."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    child = subprocess.Popen([sys.executable, "-c", RESUME_COUNTER], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(0.2)
        os.kill(child.pid, signal.SIGCONT)
        assert child.stdout.readline().strip() == "1"
        assert child.wait(timeout=20) == 0
    finally:
        child.kill()
