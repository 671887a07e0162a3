"""Timing rules that need no GPU: the host cross-check and how shape timings become a speedup."""

from __future__ import annotations

import math

import pytest

from kbx.contract.timing_policy import SUSPECT_SPEEDUP, TimingPolicy, combine
from kbx.core.record import Status
from kbx.sandbox.timing import _summary, energy_calls
from kbx.tasks import discover

POLICY = TimingPolicy()


def test_host_time_within_launch_overhead_is_not_suspect():
    row = _summary([0.05] * 10, [0.03] * 10, POLICY)  # 30 us of host time beyond the GPU's window
    assert row["hidden_work"] == "" and row["median_ms"] == 0.05 and row["reps"] == 10


def test_host_time_far_beyond_the_gpu_window_is_suspect():
    row = _summary([0.05] * 10, [2.4] * 10, POLICY)  # e.g. work on a side stream the events do not see
    assert row["hidden_work"].startswith("host wall time exceeds the GPU's by 2.400 ms")


def test_long_kernels_get_proportional_host_slack():
    assert _summary([10.0] * 5, [1.0] * 5, POLICY)["hidden_work"] == ""  # 10 % of a 10 ms kernel


def _row(shape, ms, ok=True):
    return {"shape": shape, "ok": ok, "median_ms": ms, "iqr_ms": 0.0, "reps": 10, "flops": 1e9, "bytes": 1e9,
            "first_call_ms": 1.0}  # fmt: skip


def test_speedup_is_the_geometric_mean_over_shapes_both_sides_timed():
    task = discover()["Math/add"]
    kernel = [_row("a", 1.0), _row("b", 4.0), _row("c", 1.0)]
    baseline = {"a": _row("a", 2.0), "b": _row("b", 1.0), "c": _row("c", 1.0, ok=False)}  # c: the baseline failed
    out = combine(task, kernel, baseline)
    assert [r.shape for r in out.rows] == ["a", "b"]
    assert out.speedup == pytest.approx(math.sqrt(2.0 * 0.25)) and out.status is Status.OK and out.reason == ""
    assert out.rows[0].gbps == pytest.approx(1e9 / 1e-3 / 1e9)


def test_hidden_work_in_a_timing_fails_the_kernel_itself():
    task = discover()["Math/add"]
    kernel = [{**_row("a", 0.01), "hidden_work": "host wall time exceeds the GPU's by 2.4 ms"}]
    out = combine(task, kernel, {"a": _row("a", 1.0)})
    assert out.status is Status.HIDDEN_WORK and "shape a" in out.reason
    assert not Status.HIDDEN_WORK.correct and Status.HIDDEN_WORK.compiled and Status.HIDDEN_WORK.judged


def test_a_speedup_above_the_review_threshold_is_flagged():
    task = discover()["Math/add"]
    out = combine(task, [_row("a", 1.0)], {"a": _row("a", 2 * SUSPECT_SPEEDUP)})
    assert out.speedup == pytest.approx(2 * SUSPECT_SPEEDUP) and "flagged for review" in out.reason
    assert out.status is Status.TIMING_SUSPECT


def test_energy_burst_is_sized_by_the_slower_of_event_and_host_time():
    """A kernel that hides 20 ms of work from the CUDA events (a side stream) measures ~0 ms per
    call; sized by that, its burst once queued 20,000 calls (minutes of GPU). Sized by the host's
    time per call, the burst stays about energy_burst_ms long."""
    pol = TimingPolicy()
    event_ms, host_ms = 0.004, 20.0
    row = _summary([event_ms] * 20, [host_ms - event_ms] * 20, pol)
    assert row["hidden_work"]
    calls = energy_calls(pol, max(row["median_ms"], row["host_median_ms"]))
    assert calls * host_ms <= 2 * pol.energy_burst_ms
    assert energy_calls(pol, event_ms) * host_ms > 1000 * pol.energy_burst_ms  # what the events alone would ask


def test_a_shapes_window_figures_are_both_sides_summed():
    task = discover()["Math/add"]
    window = {"exclusive_ms": 30.0, "quiet_wait_ms": 5.0, "warmup_ms": 10.0, "energy_ms": 0.0}
    out = combine(task, [{**_row("a", 1.0), **window}], {"a": {**_row("a", 2.0), **window, "energy_ms": 100.0}})
    r = out.rows[0]
    assert (r.exclusive_ms, r.quiet_wait_ms, r.warmup_ms, r.energy_ms) == (60.0, 10.0, 20.0, 100.0)


def _perf_rows(info, launches: list[int]) -> list[dict]:
    from kbx.sandbox.timing import empty_row

    return [{**empty_row(case.name), "ok": True, "prepare_launches": n} for case, n in zip(info.spec.perf, launches)]


def test_a_perf_shape_without_a_triton_launch_is_no_triton():
    """The cases' launch check again at each perf shape: an entry that switches to PyTorch for large
    inputs (or torch.compile past Dynamo's recompile limit) must not have PyTorch's time counted."""
    from kbx.sandbox.judging import judge_perf_outputs

    info = discover()["Activation/relu"]
    launches = [1] * len(info.spec.perf)
    launches[0] = 0
    verdict = judge_perf_outputs(info, {}, _perf_rows(info, launches), "cpu", expected_for=None)
    assert verdict.status is Status.NO_TRITON and info.spec.perf[0].name in verdict.reason


def test_perf_shapes_that_launched_triton_go_on_to_the_output_check():
    from kbx.sandbox.judging import judge_perf_outputs

    info = discover()["Activation/relu"]
    verdict = judge_perf_outputs(info, {}, _perf_rows(info, [1] * len(info.spec.perf)), "cpu", expected_for=None)
    assert verdict.status is Status.MISMATCH and "not saved" in verdict.reason  # past the launch check
