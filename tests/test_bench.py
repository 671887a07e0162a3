"""kbx.bench's figures from a benchmark report: timing repeatability and the share of exclusive timing
(the expert table: test_bench_table.py)."""

from __future__ import annotations

from kbx.bench import exclusive_share, repeatability, summarize


def test_repeatability_over_shapes_both_runs_timed():
    def run(ms):
        return [{"task": "Math/add", "shapes": [{"shape": s, "kernel_ms_median": v} for s, v in ms.items()]}]

    rep = repeatability(run({"a": 1.0, "b": 1.0, "c": 2.0}), run({"a": 1.0, "b": 1.1, "d": 5.0}))
    assert rep["shapes"] == 2 and abs(rep["median_rel_delta"] - 0.1 / 1.05 / 2) < 1e-12


def test_exclusive_share_counts_candidate_and_baseline_timings_per_gpu():
    run = {"wall_s": 10.0, "records": [{"time_s": 2.0, "baseline_s": 1.0}, {"time_s": 1.0, "baseline_s": 0.0}]}
    assert exclusive_share(run, gpus=1) == 0.4
    assert exclusive_share(run, gpus=2) == 0.2


def test_summary_of_a_report_from_before_the_split_fields():
    record = {"task": "Math/add", "status": "ok", "compile_s": 1.0, "check_s": 2.0, "judge_s": 0.5, "time_s": 0.5,
              "shapes": []}  # fmt: skip
    s = summarize({"n_kernels": 1, "gpus": 1, "runs": [{"wall_s": 4.0, "records": [record]}]})
    assert s["stages_s"]["paused_s"] == 0.0 and s["stages_s"]["check_s"] == 2.0
    assert s["exclusive_share"] == 0.125
