"""The host's state over a shape's repetitions (kbx.sandbox.hostload): real /proc readings, and unknowns
where the files are missing."""

from __future__ import annotations

import math
import os
import time

from kbx.contract.timing_policy import HOST_FIELDS, NO_PEAKS, timed_shape
from kbx.sandbox import hostload
from kbx.sandbox.timing import empty_row

SPIN_S = 0.2  # long enough for /proc/stat's jiffies (10 ms) to see this process busy


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_busy_process_reads_its_own_core_and_a_busy_host():
    before = hostload.sample()
    _spin(SPIN_S)
    got = hostload.since(before)
    assert set(got) == set(HOST_FIELDS)
    assert got["host_cpu"] in os.sched_getaffinity(0)
    cores = os.cpu_count() or 1
    assert 100.0 / cores * 0.5 <= got["host_busy_pct"] <= 100.0  # at least half of one core: this spin
    assert got["host_preempted"] >= 0 and 0.0 <= got["host_steal_pct"] <= got["host_busy_pct"]
    assert math.isnan(got["host_mhz"]) or got["host_mhz"] > 0


def test_missing_proc_files_give_unknowns_not_errors(monkeypatch, tmp_path):
    monkeypatch.setattr(hostload, "PROC_STAT", tmp_path / "stat")
    monkeypatch.setattr(hostload, "SELF_STAT", tmp_path / "self-stat")
    got = hostload.since(hostload.sample())
    assert got["host_cpu"] == -1 and math.isnan(got["host_mhz"]) and math.isnan(got["host_busy_pct"])
    assert math.isnan(got["host_steal_pct"])


def test_the_kernel_sides_readings_reach_the_shapes_record():
    row = {**empty_row("s"), "median_ms": 1.0, "iqr_ms": 0.0, "reps": 5, "first_call_ms": 2.0, "flops": 0, "bytes": 0,
           "host_cpu": 3, "host_mhz": 2400.0, "host_preempted": 7, "host_busy_pct": 12.5,
           "host_steal_pct": 0.5}  # fmt: skip
    base = {**row, "host_cpu": 9, "host_preempted": 0}
    shape, _ = timed_shape(row, base, NO_PEAKS, ("float32",))
    assert (shape.host_cpu, shape.host_mhz, shape.host_preempted, shape.host_busy_pct, shape.host_steal_pct) == (
        3, 2400.0, 7, 12.5, 0.5)
