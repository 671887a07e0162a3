"""A timed shape measured beyond what the device can do is timing_suspect, for every method (the
check sits in kbx.contract.timing_policy.combine, which every timed attempt goes through)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from kbx.bench.limits import report, shares
from kbx.contract.timing_policy import combine
from kbx.core import roofline
from kbx.core.hardware import load_profiles, profile_for
from kbx.core.record import Status

H100 = load_profiles()["h100"]
RESULTS = Path(__file__).parents[2] / "docs" / "bench" / "results"
COPY_GBPS_H100 = 2990.0  # the H100's measured copy bandwidth (reads plus writes; docs/BENCHMARKS.md)


def _task(dtypes=("float32",)):
    return SimpleNamespace(spec=SimpleNamespace(dtypes=dtypes))


def _rows(shape: str, ms: float, gbps: float = 0.0, tflops: float = 0.0, dtypes=None):
    """A kernel row and its baseline (twice as slow) measuring `gbps` and `tflops` at `ms`."""
    row = {"shape": shape, "ok": True, "median_ms": ms, "iqr_ms": 0.0, "reps": 10, "first_call_ms": ms,
           "bytes": gbps * 1e9 * ms * 1e-3, "flops": tflops * 1e12 * ms * 1e-3}  # fmt: skip
    if dtypes is not None:
        row["dtypes"] = dtypes
    return [row], {shape: {"shape": shape, "ok": True, "median_ms": 2 * ms, "iqr_ms": 0.0, "reps": 10}}


def test_a_shape_beyond_the_hbm_peak_is_suspect_with_the_figure_and_the_limit():
    out = combine(_task(), *_rows("n2^27", ms=1.0, gbps=5000.0), hardware=H100)
    assert out.status is Status.TIMING_SUSPECT and out.speedup == pytest.approx(2.0)  # no 10x speedup needed
    limit = 3350 * 1.1 + 50e6 / 1e-3 / 1e9  # HBM peak + 10 %, plus the 50 MB L2 over 1 ms
    assert out.rows[0].gbps_limit == pytest.approx(limit)
    assert out.reason == (f"shape n2^27: 5,000 GB/s exceeds the h100's {limit:,.0f} GB/s "
                          "(HBM peak 3,350 GB/s + 10%, and its 50 MB L2 over 1 ms)")  # fmt: skip


def test_an_honest_write_heavy_shape_above_the_copy_bandwidth_is_not_suspect():
    """Index/expand_where 2048x2^15 on an H100: 537 MB in 0.161 ms, 1.15x the copy bandwidth (a
    read-plus-write yardstick) and 0.995 of the HBM peak alone; the L2 held part of its writes."""
    for gbps in (1.1 * COPY_GBPS_H100, 3334.0):
        out = combine(_task(), *_rows("2048x2^15", ms=0.161, gbps=gbps), hardware=H100)
        assert out.status is Status.OK, out.reason
        assert out.rows[0].gbps < out.rows[0].gbps_limit


def test_compute_is_held_to_the_peak_of_the_shapes_own_input_types():
    half = combine(_task(("float16",)), *_rows("square_8192", ms=1.0, tflops=1200.0), hardware=H100)
    assert half.status is Status.TIMING_SUSPECT
    assert "1,200.0 TFLOP/s exceeds the h100's 1,088.3 TFLOP/s (float16 peak 989.4 TFLOP/s + 10%)" in half.reason
    int8 = combine(_task(("int8",)), *_rows("square_8192", ms=1.0, tflops=1200.0), hardware=H100)
    assert int8.status is Status.OK  # int8 tensor cores: twice bf16's rate
    # A task with fp16 and fp32 shapes: its fp32 shape is held to the TF32 peak, not to fp16's.
    mixed = _task(("float32", "float16"))
    fp32 = combine(mixed, *_rows("square_8192", ms=1.0, tflops=600.0, dtypes=["float32"]), hardware=H100)
    assert fp32.status is Status.TIMING_SUSPECT and "float32 peak 494.7 TFLOP/s" in fp32.reason
    fp16 = combine(mixed, *_rows("square_8192_fp16", ms=1.0, tflops=600.0, dtypes=["float16"]), hardware=H100)
    assert fp16.status is Status.OK
    honest = combine(_task(), *_rows("square_8192", ms=2.28, tflops=482.5), hardware=H100)  # symmetric_mm's
    assert honest.status is Status.OK


def test_both_limits_and_a_large_speedup_are_all_named():
    rows, baseline = _rows("n2^27", ms=1.0, gbps=9000.0, tflops=900.0)
    baseline["n2^27"]["median_ms"] = 50.0
    out = combine(_task(), rows, baseline, hardware=H100)
    assert out.status is Status.TIMING_SUSPECT
    assert out.reason.count("exceeds the h100's") == 2 and "speedup 50.0x over eager" in out.reason


def test_hidden_work_outranks_a_suspect_rate():
    rows, baseline = _rows("n2^27", ms=1.0, gbps=9000.0)
    rows[0]["hidden_work"] = "host wall time exceeds the GPU's"
    assert combine(_task(), rows, baseline, hardware=H100).status is Status.HIDDEN_WORK


def test_a_gpu_without_a_profile_has_no_limits():
    out = combine(_task(), *_rows("n2^27", ms=1.0, gbps=1e6, tflops=1e6))
    assert out.status is Status.OK and math.isnan(out.rows[0].gbps_limit) and math.isnan(out.rows[0].tflops_limit)
    assert profile_for("NVIDIA H100 80GB HBM3").name == "h100" and profile_for("Some Other GPU") is None


def test_the_margins_hold_every_committed_measurement():
    """What the margins rest on (kbx.core.roofline): no shape kbx measured on an H100 or H200 (experts,
    torch.compile, docs/bench/results) comes near them, and each figure's best is where the comment says."""
    rows = [row for path in sorted(RESULTS.glob("h*.json")) for row in shares(path)]
    assert len(rows) > 3_500  # every timed shape of the committed expert and torch.compile runs, both cards
    best_bw = max(rows, key=lambda r: r.bandwidth_share)
    best_compute = max(rows, key=lambda r: r.compute_share)
    assert best_bw.bandwidth_share == pytest.approx(0.927, abs=5e-4)
    assert best_compute.compute_share == pytest.approx(0.975, abs=5e-4)
    assert best_bw.bandwidth_share < 1 + roofline.BANDWIDTH_MARGIN
    assert best_compute.compute_share < 1 + roofline.COMPUTE_MARGIN
    text = report([str(RESULTS / "h100_reference_2026-12-06.json")])
    assert "margin 10% flags 0 of" in text and "Index/expand_where" in text


def test_a_shapes_types_are_its_tensor_arguments():
    """What the worker reports with each timed shape (kbx.sandbox.timing), for its compute limit."""
    import torch

    from kbx.tasks.inputs import tensor_dtypes
    from kbx.tasks.spec import Call

    call = Call(args=(torch.ones(2, dtype=torch.float16), [torch.ones(2, dtype=torch.int8)], 3),
                kwargs={"weight": torch.ones(2), "dim": 0})  # fmt: skip
    assert tensor_dtypes(call) == ["float16", "float32", "int8"]


@pytest.mark.gpu
def test_no_stream_of_reads_or_writes_passes_the_hbm_peak():
    """The yardstick itself, measured: a copy, a fill and a sum of 1 GiB each stay under the profile's
    HBM peak, so a shape's rate above it (beyond the margin and the L2) is no measurement to trust."""
    import torch

    from kbx.bench.suite import STREAM_PATTERNS, stream_gbps

    profile = profile_for(torch.cuda.get_device_name(0))
    assert profile is not None, "no hardware profile for this GPU"
    for pattern in STREAM_PATTERNS:
        assert 0 < stream_gbps(pattern) < profile.peak_bw_gbs, pattern
