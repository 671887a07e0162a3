"""analysis.load and analysis.report over small synthetic stores (no kbx run needed), and the CLI's errors."""

from __future__ import annotations

import json
import pandas as pd
import pytest

from analysis import bench, load
from analysis.report import report

SMALL = 20  # task runs: one per job (5 methods x 4 GPUs)


@pytest.fixture
def uri(tmp_path):
    return f"sqlite:///{tmp_path}/mlflow.db"


def test_sql_fill_and_client_fill_load_to_the_same_frame(uri):
    """The benchmark's direct SQL fill is a faithful kbx store: the public API reads it back identically."""
    runs = bench.synthetic_runs(SMALL, seed=5)
    bench.fill(uri, "sql", runs)
    bench.fill(uri, "client", bench.synthetic_runs(SMALL, seed=5), via_client=True)
    columns = [c for c in load.COLUMNS if c not in ("experiment", "job_run_id", "run_id")]
    frames = []
    for experiment, bulk in (("sql", True), ("client", True), ("sql", False), ("client", False)):
        frame, selection = load.load(uri, experiment, bulk=bulk)
        assert selection.n_task_runs == SMALL and len(selection.job_run_ids) == len(bench.METHODS) * len(bench.HARDWARE)
        frames.append(frame[columns].sort_values(["method", "hardware", "task", "round"]).reset_index(drop=True))
    for other in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], other, check_dtype=False)
    assert len(frames[0]) == SMALL * bench.ROUNDS


def test_report_over_a_synthetic_gpu_store(uri, tmp_path):
    bench.fill(uri, "gpu", bench.synthetic_runs(300, seed=2))  # 15 tasks a job: every category
    summary = report(uri, "gpu", "", tmp_path / "out")
    out = tmp_path / "out"
    dev = json.loads((out / "deviance.json").read_text())
    assert dev["category"]["explained_deviance"] == pytest.approx(summary["category_explained_deviance"])
    assert dev["ratio"]["replicates"] > 0
    spread = pd.read_csv(out / "tables" / "cross_hardware.csv")
    assert (spread["gpus"] >= 2).all() and (spread["ratio"] >= 1).all()
    heads = json.loads((out / "headline.json").read_text())
    assert all(h["kbx"] is not None for h in heads), heads
    filtered = report(uri, "gpu", "params.hardware = 'h100'", tmp_path / "h100", log_to_mlflow=False)
    assert filtered["task_runs"] == len(pd.read_csv(tmp_path / "h100" / "outcomes.csv"))
    assert set(pd.read_csv(tmp_path / "h100" / "runs.csv")["hardware"]) == {"h100"}


def test_degenerate_store_is_reported_not_crashed_on(uri, tmp_path):
    """One method, one GPU, one category, all failing, nothing timed: every file still appears."""
    runs = [r for r in bench.synthetic_runs(SMALL, seed=1) if r.params.get("method") in (None, "oneshot")]
    runs = [r for r in runs if r.params.get("hardware") in (None, "h100")]
    for r in runs:
        if "task" in r.params:
            r.params["category"] = "Quantization"
            r.metrics = [(k, 0.0 if "correct" in k else v, s) for k, v, s in r.metrics if "speedup" not in k
                         and "_ms" not in k]  # fmt: skip
    bench.fill(uri, "one", [r for r in runs if r.params.get("method") == "oneshot"])
    report(uri, "one", "", tmp_path / "out", log_to_mlflow=False)
    text = (tmp_path / "out" / "report.md").read_text()
    for phrase in ("a single method", "a single category", "a single hardware", "every run fails",
                   "no kernel was timed", "nothing to explain"):  # fmt: skip
        assert phrase in text, phrase
    assert "CPU runs" not in text and "on h100: no kernel was correct" in text  # the reason fits a GPU run
    assert (tmp_path / "out" / "plots" / "speedup_distribution.png").stat().st_size > 0


def test_bench_runs_end_to_end(tmp_path):
    figures = bench.run_bench(200, tmp_path / "bench")
    assert figures["task_runs"] == 200 and figures["report_s"] > 0 and figures["report_cli_cpu_s"] > 0
    assert (tmp_path / "bench" / "report" / "report.md").is_file()


def test_cli_errors_are_one_line(uri, tmp_path, capsys):
    from analysis.__main__ import main

    bench.fill(uri, "x", bench.synthetic_runs(20))
    common = ["report", "--tracking-uri", uri, "--out", str(tmp_path / "o")]
    for args, message in ((["--experiment", "nope"], "no MLflow experiment named 'nope'"),
                          (["--experiment", "x", "--filter", "params.method = 'none'"], "match the filter")):  # fmt: skip
        assert main([*common, *args]) == 2
        assert message in capsys.readouterr().err
