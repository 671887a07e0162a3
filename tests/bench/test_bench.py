"""kbx.bench's figures from a benchmark report: timing repeatability and the share of exclusive timing
(the expert table: test_bench_table.py)."""

from __future__ import annotations

import json
import time

import pytest

from kbx.bench.suite import exclusive_share, format_report, main, repeatability, summarize, summary_data, window_split


def test_repeatability_over_shapes_both_runs_timed():
    def run(ms):
        return [{"task": "Math/add", "shapes": [{"shape": s, "kernel_ms_median": v} for s, v in ms.items()]}]

    rep = repeatability(run({"a": 1.0, "b": 1.0, "c": 2.0}), run({"a": 1.0, "b": 1.1, "d": 5.0}))
    assert rep["shapes"] == 2 and abs(rep["median_rel_delta"] - 0.1 / 1.05 / 2) < 1e-12
    assert [(c["shape"], c["ms"]) for c in rep["largest"]] == [("b", [1.0, 1.1]), ("a", [1.0, 1.0])]


def test_repeatability_also_over_the_shapes_no_run_found_host_bound():
    """A host-bound shape's time follows the host's load: the figures over the others say what kbx's own
    timing repeats to; a shape either run found host-bound is left out of them."""

    def run(ms, host_bound=()):
        shapes = [{"shape": s, "kernel_ms_median": v, "host_bound": s in host_bound} for s, v in ms.items()]
        return [{"task": "LinearAlgebra/qr", "status": "ok", "speedup": 1.0, "wall_s": 1.0, "shapes": shapes}]

    first, second = run({"a": 1.0, "b": 1.0, "c": 10.0}, host_bound={"c"}), run({"a": 1.0, "b": 1.02, "c": 15.0})
    rep = repeatability(first, second)
    assert rep["shapes"] == 3 and rep["p95_rel_delta"] == pytest.approx(0.4)
    assert rep["gpu_bound_shapes"] == 2 and rep["gpu_bound"]["p95_rel_delta"] == pytest.approx(0.02 / 1.01)
    assert rep["largest"][0]["host_bound"] == [True, False]
    report = {"device": "H200", "n_kernels": 1, "gpus": 1,
              "runs": [{"wall_s": 1.0, "records": first}, {"wall_s": 1.0, "records": second}]}  # fmt: skip
    text = format_report(report)
    assert "neither run found host-bound: median 0.99%, p95 1.98%" in text
    assert [c["shape"] for c in rep["gpu_bound_largest"]] == ["b", "a"]  # the host-bound c would hide b
    assert text.split("largest among the shapes neither run found host-bound:")[1].split()[:2] == ["LinearAlgebra/qr", "b"]


def test_exclusive_share_counts_candidate_and_baseline_windows_per_gpu():
    run = {"wall_s": 10.0, "records": [{"exclusive_s": 3.0}, {"exclusive_s": 1.0}]}
    assert exclusive_share(run, gpus=1) == 0.4
    assert exclusive_share(run, gpus=2) == 0.2


def test_the_windows_split_into_calls_draining_warm_up_energy_fresh_inputs_and_the_rest():
    shape = {"shape": "a", "kernel_ms_median": 1.0, "reps": 10, "baseline_ms_median": 2.0, "baseline_reps": 5,
             "exclusive_ms": 100.0, "quiet_wait_ms": 20.0, "warmup_ms": 20.0, "energy_ms": 30.0,
             "refresh_ms": 5.0}  # fmt: skip
    before_the_fields = {"shape": "b", "kernel_ms_median": None, "reps": 0, "exclusive_ms": 50.0}
    split = window_split([{"shapes": [shape]}, {"shapes": [before_the_fields]}, {"shapes": []}])
    assert split == pytest.approx({"held": 0.15, "calls": 0.02, "quiet_wait": 0.02, "warmup": 0.02, "energy": 0.03,
                                   "refresh": 0.005, "rest": 0.055})  # fmt: skip


def test_summary_of_a_report_from_before_the_split_fields():
    record = {"task": "Math/add", "status": "ok", "compile_s": 1.0, "check_s": 2.0, "judge_s": 0.5, "time_s": 0.5,
              "shapes": []}  # fmt: skip
    s = summarize({"n_kernels": 1, "gpus": 1, "runs": [{"wall_s": 4.0, "records": [record]}]})
    assert s["stages_s"]["paused_s"] == 0.0 and s["stages_s"]["check_s"] == 2.0
    assert s["exclusive_share"] == 0.0 and s["max_exclusive_s"] == 0.0 and len(s["runs"]) == 1


def test_the_projection_is_to_every_task_of_the_registry():
    from kbx.tasks import discover

    s = summarize({"n_kernels": 2, "gpus": 1, "runs": [{"wall_s": 3.0, "records": []}]})
    assert s["suite_projection_s"] == pytest.approx(1.5 * len(discover()))


def test_the_summary_data_has_the_keys_the_plots_read():
    def rec(ms, window):
        return {"task": "Math/add", "status": "ok", "exclusive_s": window, "max_window_s": window,
                "shapes": [{"shape": "a", "kernel_ms_median": ms, "gbps": 2000.0, "tflops": 0.1}]}  # fmt: skip

    report = {"device": "NVIDIA H100", "n_kernels": 1, "gpus": 1, "copy_gbps": 2500.0, "ridge_flops_per_byte": 20.0,
              "runs": [{"wall_s": 2.0, "records": [rec(1.0, 0.4)]}, {"wall_s": 1.0, "records": [rec(1.02, 0.6)]}]}
    data = summary_data(report, "python -m kbx.bench eval")
    for key in ("device", "commit", "kernels", "runs", "repeat_median_pct", "repeat_p95_pct", "copy_bw_median_pct",
                "copy_bw_p25_pct"):
        assert key in data
    assert [r["s_per_kernel"] for r in data["runs"]] == [2.0, 1.0]
    assert [r["max_exclusive_s"] for r in data["runs"]] == [0.4, 0.6]
    assert abs(data["repeat_median_pct"] - 100 * 0.02 / 1.01) < 1e-9 and data["copy_bw_median_pct"] == 80.0


def test_a_summary_from_a_run_cut_short_counts_what_finished(tmp_path):
    """kbx.bench summary: the second run was stopped by the device's time limit after one of two
    kernels; its rate is over that one, and its shapes still give the repeatability."""

    def rec(task, ms):
        return {"task": task, "status": "ok", "exclusive_s": 0.1, "max_window_s": 0.1, "speedup": 1.0, "wall_s": 1.0,
                "shapes": [{"shape": "a", "kernel_ms_median": ms, "gbps": 0.0, "tflops": 0.0}]}  # fmt: skip

    report = {"device": "NVIDIA H100", "n_kernels": 2, "gpus": 1, "workers_per_gpu": 8,
              "runs": [{"wall_s": 4.0, "records": [rec("Math/add", 1.0), rec("Math/mul", 2.0)]}],
              "partial": {"run": 1, "wall_s": 1.5, "records": [rec("Math/mul", 2.2)]}}  # fmt: skip
    source, out = tmp_path / "eval.json", tmp_path / "summary.json"
    source.write_text(json.dumps(report))
    assert main(["summary", str(source), "--summary", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [(r["s_per_kernel"], r["kernels"], r["partial"]) for r in data["runs"]] == [(2.0, 2, False), (1.5, 1, True)]
    assert data["repeat_shapes"] == 1 and abs(data["repeat_median_pct"] - 100 * 0.2 / 2.1) < 1e-9


def test_the_quiet_report_gives_each_neighbours_change():
    from kbx.bench.quiet import format_quiet_report, quiet_report
    from kbx.core.record import EvalRecord, Status

    def rec(task, status, speedup):
        return EvalRecord(task=task, task_version=1, status=status, speedup=speedup)

    runs = {"clean": [rec("Math/add", Status.OK, 1.0)],
            "thread": [rec("Activation/gelu", Status.HIDDEN_WORK, 2.0), rec("Math/add", Status.OK, 1.1)]}  # fmt: skip
    report = quiet_report(runs)
    assert report["thread"]["noisy"]["status"] == "hidden_work"
    assert abs(report["thread"]["beside"][0]["change_pct"] - 100 * 0.0953101798) < 1e-6  # |log 1.1|
    assert "Math/add ok 1.100x (+9.5 %)" in format_quiet_report(report)


def test_overhead_bench_gives_both_commands_the_same_tasks(tmp_path):
    """Both commands judge the same tasks: a whole category as the user types it, or the tasks
    picked (or a category's tasks with an expert kernel, which kbx.bench eval keeps to) by id."""
    from kbx.bench.overhead import _argv, _summarized
    from kbx.tasks import discover, select

    store = tmp_path / "s" / "mlflow.db"
    experts = [t.id for t in select(discover(), [], "activation") if t.expert_path]
    for subset, picked in ((False, experts), (True, experts[:2])):
        run = _argv("run", "activation", 8, "h100", picked, subset, store, tmp_path, 0)
        bench = _argv("eval", "activation", 8, "h100", picked, subset, store, tmp_path, 0)
        assert "eval.workers=8" in run and "hardware=h100" in run and bench[bench.index("--workers") + 1] == "8"
        default = _argv("run_default", "activation", 8, "h100", picked, subset, store, tmp_path, 0)
        assert not any(a.startswith("eval.workers") for a in default), "as typed: the profile's workers"
        if subset:
            assert f"task=[{','.join(picked)}]" in run
            assert [bench[i + 1] for i, a in enumerate(bench) if a == "--task"] == picked
        else:
            assert not any(a.startswith("task=") for a in run) and "--task" not in bench
    report = _summarized({"wall_s": {"eval": [60.0, 62.0], "run": [63.0, 64.0], "run_existing": [61.0, 61.5]},
                          "cpu_s": {"eval": [1.0], "run": [2.0], "run_existing": [1.5]}})  # fmt: skip
    assert report["ratio"]["run"] == pytest.approx(63.5 / 61.0)


def test_host_load_counts_the_drivers_cpu_and_the_hosts(tmp_path):
    """Whether a multi-GPU run's host or its one driver process is the shared resource: the driver's
    CPU seconds since the start (a second of busy work here) and every CPU's busy share."""
    from kbx.bench.host_load import HostLoad, cpu_jiffies

    load = HostLoad()
    deadline = time.process_time() + 1.0
    while time.process_time() < deadline:
        pass
    figures = load.figures()
    assert 0.9 <= figures["driver_cpu_s"] <= 3.0 and 0.0 < figures["driver_cpu_share"] <= 1.5  # wall: the load
    assert figures["host_cpus"] >= 1 and 0.0 < figures["host_cpu_busy_pct"] <= 100.0
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\n")
    assert cpu_jiffies(str(stat)) == (150.0, 1000.0)  # busy excludes idle and iowait
    assert cpu_jiffies(str(tmp_path / "absent")) is None


# one timed attempt's record, as kbx.bench eval keeps it
RECORD = {"task": "Math/add", "status": "ok", "exclusive_s": 0.1, "max_window_s": 0.1, "speedup": 1.0, "wall_s": 1.0,
          "shapes": []}  # fmt: skip


def test_the_summary_carries_each_runs_host_load():
    run = {"wall_s": 10.0, "records": [RECORD], "driver_cpu_s": 9.5, "driver_cpu_share": 0.95, "host_cpus": 64,
           "host_cpu_busy_pct": 41.0}  # fmt: skip
    report = {"device": "NVIDIA H100", "n_kernels": 1, "gpus": 4, "runs": [run, {"wall_s": 5.0, "records": [RECORD]}]}
    data = summary_data(report, "python -m kbx.bench eval")
    assert data["runs"][0]["driver_cpu_share"] == 0.95 and data["runs"][0]["host_cpu_busy_pct"] == 41.0
    assert "driver_cpu_s" not in data["runs"][1]  # a run from before kbx.bench.host_load
    assert "driver CPU 9.5 s (95% of the wall), 64 host CPUs, host CPUs busy 41%" in format_report(report)


def test_gpu_load_averages_each_gpus_readings_and_says_nothing_without_them():
    """GPU busy share per GPU, sampled by a thread; a GPU that gives no reading (no NVML, a CPU run)
    leaves the figure out rather than reporting 0 %."""
    from kbx.bench.host_load import GpuLoad

    readings = {0: iter([20.0, 40.0] + [30.0] * 1000), 1: iter([90.0] * 1000)}
    load = GpuLoad([0, 1], read=lambda i: next(readings[i]), interval_s=0.01)
    deadline = time.monotonic() + 10.0
    while len(load.samples[0]) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    load.stop()
    n0 = len(load.samples[0])
    assert n0 >= 5 and not load.thread.is_alive()
    want0 = (20.0 + 40.0 + 30.0 * (n0 - 2)) / n0
    assert load.figures()["gpu_busy_pct"] == pytest.approx([want0, 90.0])
    silent = GpuLoad([0], read=lambda i: -1.0, interval_s=0.01)
    time.sleep(0.05)
    silent.stop()
    cpu_run = GpuLoad([])
    cpu_run.stop()
    assert silent.figures() == {} and cpu_run.figures() == {} and not cpu_run.thread.is_alive()


def test_the_report_says_how_busy_each_gpu_was():
    run = {"wall_s": 10.0, "records": [RECORD], "driver_cpu_s": 1.0, "driver_cpu_share": 0.1, "host_cpus": 16,
           "host_cpu_busy_pct": 33.0, "gpu_busy_pct": [97.4, 61.0]}  # fmt: skip
    report = {"device": "NVIDIA H100", "n_kernels": 1, "gpus": 2, "runs": [run]}
    assert summary_data(report, "python -m kbx.bench eval")["runs"][0]["gpu_busy_pct"] == [97.4, 61.0]
    assert "GPU running a kernel 97% / 61% of the time" in format_report(report)


def test_the_report_gives_the_judges_start_up_and_their_first_requests_cost():
    """kbx.bench.judge_start_figures: the median of each start-up phase over the judges, and the judge
    time of the first attempts to finish (one per judge) against the rest's."""
    from kbx.bench.suite import judge_start_figures

    startups = [{"import_s": 2.0, "cuda_context_s": 1.0}, {"import_s": 4.0, "cuda_context_s": 3.0}, {"import_s": 3.0}]
    finished = [{"judge_s": s} for s in (9.0, 7.0, 8.0, 0.5, 0.7, 0.9, 0.8)]  # in the order they finished
    figures = judge_start_figures(startups, finished)
    assert figures == {"judge_startup_s": {"cuda_context_s": 2.0, "import_s": 3.0},
                       "first_judge_s": {"attempts": 3, "median": 8.0, "rest_median": 0.75}}  # fmt: skip
    run = {"wall_s": 10.0, "records": [RECORD], **figures}
    report = {"device": "NVIDIA H100", "n_kernels": 1, "gpus": 1, "runs": [run]}
    assert summary_data(report, "python -m kbx.bench eval")["runs"][0]["first_judge_s"]["median"] == 8.0
    assert ("judges' start-up (median s): cuda_context 2.00, import 3.00; judge time of the first 3 attempts 8.00 s "
            "(median), the rest 0.75 s") in format_report(report)  # fmt: skip
    assert judge_start_figures([], []) == {"judge_startup_s": {}, "first_judge_s": {"attempts": 0, "median": 0.0,
                                                                                  "rest_median": 0.0}}  # fmt: skip


def test_the_commit_named_by_kbx_commit_wins_over_a_stale_checkouts(monkeypatch):
    """A tree copied onto a GPU machine carries old git metadata: KBX_COMMIT names the code."""
    from kbx.core.provenance import kbx_commit

    monkeypatch.delenv("KBX_COMMIT", raising=False)
    checkout = kbx_commit()
    monkeypatch.setenv("KBX_COMMIT", "0123abc")
    assert kbx_commit() == "0123abc" != checkout


def test_ctrl_c_keeps_the_finished_records_and_exits_at_once(tmp_path):
    """`kbx.bench eval` stopped by Ctrl-C while an attempt is in flight: out within seconds, one line,
    no traceback, and the records finished so far in its JSON (it once ran a traceback and 4 s)."""
    from tests.conftest import ctrl_c_once

    out = tmp_path / "bench.json"
    code, exit_s, err = ctrl_c_once(["kbx.bench", "eval", "--runs", "1", "--workers", "2", "--task", "Math/add",
                                     "--task", "Fusion/fused_svd_reconstruct", "--json", str(out)],
                                    lambda: _partial_records(out))  # fmt: skip
    assert code == 130 and exit_s < 10, (code, exit_s)  # 0.1 s (docs/BENCHMARKS.md)
    assert err.strip().splitlines()[-1] == f"kbx.bench: interrupted: run 0's 1 of 2 records kept (in {out})"
    assert "Traceback" not in err
    assert [r["task"] for r in _partial_records(out)] == ["Math/add"]


def _partial_records(path) -> list:
    try:
        return json.loads(path.read_text())["partial"]["records"]
    except (OSError, ValueError, KeyError):
        return []


def test_the_traces_bench_runs_the_same_job_bare_and_through_kbx_run(tmp_path):
    """P5 compares like with like: the bare evaluator's job (kbx.bench llm against the same scripted
    server) and kbx.run's take the same tasks, rounds, workers and llm.concurrency; only kbx.run's
    jobs differ in tracking.traces."""
    from kbx.bench.llm import scripted_tasks
    from kbx.bench.traces import _argv

    tasks = list(scripted_tasks(3))
    assert len(tasks) == 3 and not any("kbx.experts" in code for code in scripted_tasks(3).values())
    bare = _argv("bare", tasks, 2, 4, "http://127.0.0.1:1/v1", tmp_path / "key", tmp_path / "bare")
    on = _argv("on", tasks, 2, 4, "http://127.0.0.1:1/v1", tmp_path / "key", tmp_path / "on")
    off = _argv("off", tasks, 2, 4, "http://127.0.0.1:1/v1", tmp_path / "key", tmp_path / "off")
    assert [bare[i + 1] for i, a in enumerate(bare) if a == "--task"] == tasks
    assert list(scripted_tasks(len(tasks), tuple(tasks))) == tasks  # what kbx.bench llm --task ... picks
    assert f"task=[{','.join(tasks)}]" in on
    for flag, override in (("--rounds", "iteration.rounds=2"), ("--workers", "eval.workers=4"),
                           ("--concurrency", "llm.concurrency=4"), ("--api-base", "llm.api_base=http://127.0.0.1:1/v1")):
        assert f"{override.split('=')[0]}={bare[bare.index(flag) + 1]}" == override and override in on
    assert "tracking.traces=true" in on and "tracking.traces=false" in off
    assert [a for a in on if not a.startswith(("tracking", "hydra"))] == [a for a in off if not a.startswith(("tracking", "hydra"))]
