"""analysis export (MLflow stores -> records CSV) and analysis findings (records -> docs/FINDINGS.md).

The stores are synthetic kbx stores (analysis.bench: kbx's tracking contract, filled in one
transaction) with the paper's three method rows on two GPUs; every expected figure is computed
here from the runs as they were generated, not through the analysis code under test.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from analysis import bench, export, findings, findings_doc, load
from tests.conftest import REPO

METHODS = ("reference", "inductor", "predictions")  # predictions: stored GEAK kernels, relabelled geak
GPUS = ("h100", "h200")
TASK_RUNS = 270  # 45 tasks (3 per category) x 3 methods x 2 GPUs
SEED = 11
LAST = bench.ROUNDS - 1
PAPER_CLAIMS = ("category explains deviance in correctness", "method explains deviance in correctness",
                "category / method explained deviance", "GEAK compile rate after round 0, best so far",
                f"GEAK compile rate after round {LAST}, best so far",
                "GEAK mean speedup of correct kernels after round 0",
                f"GEAK mean speedup of correct kernels after round {LAST}",
                "GEAK mean speedup of kernels rescued by a later round",
                "GEAK mean speedup of kernels correct since the round before",
                "correct kernels slower than eager (geak)", "Quantization task runs correct (geak; paper: 0 of 30)",
                "Fusion tasks failing under every method")  # fmt: skip


def _store(path, gpus=GPUS, seed=SEED) -> tuple[str, list]:
    uri = f"sqlite:///{path}/mlflow.db"
    path.mkdir(parents=True, exist_ok=True)
    runs = bench.synthetic_runs(TASK_RUNS // len(GPUS) * len(gpus), seed=seed, methods=METHODS, hardware=gpus)
    bench.fill(uri, "kbx", runs)
    return uri, runs


def _generated(runs: list) -> pd.DataFrame:
    """The task runs as generated: one row per task run and round, best-so-far values (what kbx ships)."""
    rows = []
    for run in runs:
        if run.tags.get("kbx.role") != "task":
            continue
        for k in range(bench.ROUNDS):
            at = {key: v for key, v, step in run.metrics if step == k}
            rows.append({"method": run.params["method"].replace("predictions", "geak"), "gpu": run.params["hardware"],
                         "task": run.params["task"], "category": run.params["category"], "round": k,
                         "compiled": at.get("compiled", 0.0), "correct": at.get("correct", 0.0),
                         "speedup": at.get("speedup", math.nan)})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A two-GPU store, its records CSV and FINDINGS.md, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("findings")
    uri, runs = _store(tmp / "store")
    records = tmp / "docs" / "findings" / "records.csv"
    summary = export.export([uri], ["kbx"], records, {"predictions": "geak"})
    out = tmp / "docs" / "FINDINGS.md"
    doc = _generate_in(tmp)
    return {"uri": uri, "runs": runs, "records": records, "export": summary, "out": out, "doc": doc,
            "figures": findings.compute(export.read_records(records))["figures"], "truth": _generated(runs)}  # fmt: skip


def _generate_in(root) -> dict:
    """`make findings` in checkout `root`: relative paths, as the Makefile gives them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        return findings_doc.generate(findings_doc.RECORDS, findings_doc.DOCUMENT)


def _figure(made, key: str, gpu: str) -> findings.Figure:
    found = [f for f in made["figures"] if f.key == key and f.hardware == gpu]
    assert len(found) == 1, f"figure {key} on {gpu}: {len(found)} found"
    return found[0]


def test_export_writes_one_row_per_task_run_and_round(made):
    records = pd.read_csv(made["records"])
    assert made["export"]["rows"] == len(records) == TASK_RUNS * bench.ROUNDS
    assert set(records["method"]) == {"reference", "inductor", "geak"}  # --label predictions=geak
    assert set(records["hardware"]) == set(GPUS) and records["run_id"].nunique() == TASK_RUNS
    assert list(records.columns) == list(export.RECORD_COLUMNS)
    jobs = pd.read_csv(made["records"].with_name(export.JOBS_FILE))
    assert len(jobs) == len(METHODS) * len(GPUS) and set(jobs["job_run_id"]) == set(records["job_run_id"])
    assert not records.duplicated(["run_id", "round"]).any()


def test_records_read_back_as_the_frame_mlflow_gives(made):
    """The CSV loses nothing the analysis reads: its outcomes equal those of the store itself."""
    direct, _ = load.load(made["uri"], "kbx")
    direct["method"] = direct["method"].replace({"predictions": "geak"})
    back = export.read_records(made["records"])
    key = ["run_id", "round"]
    a = load.outcomes(direct).sort_values(key).reset_index(drop=True)
    b = load.outcomes(back).sort_values(key).reset_index(drop=True)
    columns = ["run_id", "method", "task", "category", "hardware", "status", "compiled", "correct"]
    pd.testing.assert_frame_equal(a[columns], b[columns], check_dtype=False)
    np.testing.assert_allclose(a["speedup"], b["speedup"], rtol=1e-5)  # six significant digits in the CSV


def test_the_same_runs_from_two_stores_are_exported_once(made, tmp_path):
    """A store and a copy of it (as two GPU nodes synced into one home store would be) give each record once."""
    import shutil

    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(made["uri"].removeprefix("sqlite:///"), copy / "mlflow.db")
    both = export.export([made["uri"], str(copy)], ["kbx"], tmp_path / "both.csv", {"predictions": "geak"})
    assert both["rows"] == made["export"]["rows"]


def test_a_second_gpus_store_appended_gives_what_both_stores_give(tmp_path):
    """`--append`: an H100 store exported alone (then gone), an H200 store added later, equals both exported at
    once; appending the same store again keeps every record as it was."""
    h100, _ = _store(tmp_path / "h100", gpus=("h100",), seed=SEED)
    h200, _ = _store(tmp_path / "h200", gpus=("h200",), seed=SEED + 1)
    label = {"predictions": "geak"}
    together, apart = tmp_path / "together" / "records.csv", tmp_path / "apart" / "records.csv"
    export.export([h100, h200], ["kbx"], together, label)
    export.export([h100], ["kbx"], apart, label)
    summary = export.export([h200], ["kbx"], apart, label, append=True)
    assert summary["hardware"] == ["h100", "h200"] and summary["jobs"] == len(METHODS) * len(GPUS)
    for name in (apart.name, export.JOBS_FILE):
        assert (apart.parent / name).read_text() == (together.parent / name).read_text()
    export.export([h200], ["kbx"], apart, label, append=True)
    assert apart.read_text() == together.read_text()


def test_export_errors_are_plain(made, tmp_path):
    with pytest.raises(load.AnalysisError, match="no MLflow store"):
        export.export([str(tmp_path / "nowhere")], ["kbx"], tmp_path / "x.csv")
    with pytest.raises(load.AnalysisError, match="--label names method"):
        export.export([made["uri"]], ["kbx"], tmp_path / "x.csv", {"geak_typo": "geak"})
    with pytest.raises(load.AnalysisError, match="METHOD=NAME"):
        export.parse_labels(["predictions"])
    assert not (tmp_path / "x.csv").exists()


def test_every_paper_headline_is_in_the_summary_for_both_gpus(made):
    text = made["out"].read_text()
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for claim in PAPER_CLAIMS:
        for gpu in GPUS:
            assert re.search(rf"^\| {re.escape(claim)} \| {gpu} \|", summary, re.M), (claim, gpu)
    assert re.search(r"^\| largest cross-GPU speedup spread \(max / min\) \| all \|", summary, re.M)
    for png in made["doc"]["plots"]:
        assert png.startswith("docs/findings/") and (made["records"].parent / png.split("/")[-1]).stat().st_size > 0
        assert f"(findings/{png.split('/')[-1]})" in text  # linked from docs/FINDINGS.md


@pytest.mark.parametrize("gpu", GPUS)
def test_geak_figures_by_round_match_the_generated_runs(made, gpu):
    truth = made["truth"]
    geak = truth[(truth["method"] == "geak") & (truth["gpu"] == gpu)]
    for k in range(bench.ROUNDS):
        at = geak[geak["round"] == k]
        compiled = _figure(made, f"geak_compile_best_r{k}", gpu)
        assert compiled.value == pytest.approx(at["compiled"].mean())
        assert compiled.interval[0] <= compiled.value <= compiled.interval[1]
        speed = _figure(made, f"geak_speedup_r{k}", gpu)
        assert speed.value == pytest.approx(at.loc[at["correct"] > 0, "speedup"].mean(), rel=1e-5)
        assert speed.task_runs == at["task"].nunique() and len(speed.jobs) == 1
    assert _figure(made, "geak_compile_best_r0", gpu).paper == pytest.approx(0.523)
    assert _figure(made, f"geak_speedup_r{LAST}", gpu).paper == pytest.approx(1.44)


@pytest.mark.parametrize("gpu", GPUS)
def test_rescued_and_persistent_speedups_match_the_generated_runs(made, gpu):
    truth = made["truth"]
    geak = truth[(truth["method"] == "geak") & (truth["gpu"] == gpu)].sort_values(["task", "round"])
    was = geak.groupby("task")["correct"].shift(1)
    now = geak[geak["round"] > 0]
    rescued = now[(now["correct"] > 0) & ~(was[now.index] > 0)]["speedup"]
    persistent = now[(now["correct"] > 0) & (was[now.index] > 0)]["speedup"]
    assert _figure(made, "rescued_speedup", gpu).value == pytest.approx(rescued.mean(), rel=1e-5)
    assert _figure(made, "persistent_speedup", gpu).value == pytest.approx(persistent.mean(), rel=1e-5)


@pytest.mark.parametrize("gpu", GPUS)
def test_slower_than_eager_and_quantization_match_the_generated_runs(made, gpu):
    final = made["truth"][(made["truth"]["round"] == LAST) & (made["truth"]["gpu"] == gpu)]
    for method in ("reference", "inductor", "geak"):
        mine = final[final["method"] == method]
        correct = mine[mine["correct"] > 0]
        fig = _figure(made, f"slower_than_eager_{method}", gpu)
        assert fig.value == pytest.approx((correct["speedup"] < 1).mean())
        quant = mine[mine["category"] == "Quantization"]
        assert _figure(made, f"quantization_correct_{method}", gpu).value == pytest.approx(quant["correct"].mean())
    fusion = final[final["category"] == "Fusion"].groupby("task")["correct"].max()
    assert _figure(made, "fusion_fail_all", gpu).value == pytest.approx((fusion == 0).mean())


@pytest.mark.parametrize("gpu", GPUS)
def test_deviance_shares_match_a_hand_computed_bernoulli_deviance(made, gpu):
    """One-factor explained deviance = 1 - D(factor) / D(null), with D from cell means (the GLM's fit)."""
    final = made["truth"][(made["truth"]["round"] == LAST) & (made["truth"]["gpu"] == gpu)]

    def dev(groups) -> float:
        total = 0.0
        for _, g in final.groupby(groups) if groups else [(None, final)]:
            p = g["correct"].mean()
            total += sum(-2 * n * x * math.log(x) for n, x in ((len(g), p), (len(g), 1 - p)) if x > 0)
        return total

    null = dev(None)
    for factor in ("category", "method"):
        fig = _figure(made, f"{factor}_explained", gpu)
        assert fig.value == pytest.approx(1 - dev(factor) / null, rel=1e-6)
        assert fig.interval is not None and fig.task_runs == len(final)
        assert fig.paper == pytest.approx(0.094 if factor == "category" else 0.033)


def test_cross_gpu_spread_matches_the_generated_runs(made):
    final = made["truth"][(made["truth"]["round"] == LAST) & (made["truth"]["correct"] > 0)]
    per_kernel = final.pivot_table(index=["method", "task"], columns="gpu", values="speedup").dropna()
    ratio = per_kernel.max(axis=1) / per_kernel.min(axis=1)
    top = _figure(made, "cross_gpu_max", findings.ALL_GPUS)
    assert top.value == pytest.approx(ratio.max(), rel=1e-5) and top.paper == pytest.approx(21.4)
    geo = _figure(made, "cross_gpu_geomean", findings.ALL_GPUS)
    assert geo.value == pytest.approx(float(np.exp(np.log(ratio).mean())), rel=1e-5)
    assert geo.interval[0] <= geo.value <= geo.interval[1]


def test_a_paper_value_outside_the_interval_gets_a_sentence(made):
    text = made["out"].read_text()
    section = text.split("## Where kbx differs from the paper, and why", 1)[1].split("\n## ", 1)[0]
    differing = [f for f in made["figures"] if f.agrees is False]
    assert differing, "the synthetic runs are far from the paper somewhere"
    for f in differing:
        line = next(line for line in section.splitlines() if f"{f.claim} on {f.hardware}: kbx" in line)
        assert f"Likely why: {findings_doc.REASONS[findings_doc.reason_key(f.key)]}." in line


def test_one_gpu_is_said_plainly_not_failed_on(tmp_path):
    uri, _ = _store(tmp_path / "store", gpus=("h100",))
    records = tmp_path / "records.csv"
    export.export([uri], ["kbx"], records, {"predictions": "geak"})
    findings_doc.generate(records, tmp_path / "FINDINGS.md")
    text = (tmp_path / "FINDINGS.md").read_text()
    assert "the records hold one GPU (h100): the cross-GPU spread cannot be computed" in text
    assert "| largest cross-GPU speedup spread (max / min) | all | 21.40x | – (the records hold one GPU (h100))" in text


def test_the_document_is_the_same_bytes_when_regenerated(made, tmp_path):
    """`make findings` on a fresh clone must reproduce the committed document and plots."""
    import shutil

    again = tmp_path / "docs" / "findings"
    again.mkdir(parents=True)
    shutil.copy(made["records"], again / "records.csv")
    shutil.copy(made["records"].with_name(export.JOBS_FILE), again / export.JOBS_FILE)
    _generate_in(tmp_path)
    assert (tmp_path / "docs" / "FINDINGS.md").read_text() == made["out"].read_text()
    for png in made["doc"]["plots"]:
        name = png.split("/")[-1]
        assert (again / name).read_bytes() == (made["records"].parent / name).read_bytes(), name


def test_two_jobs_of_one_method_on_one_gpu_are_pointed_out(tmp_path):
    """Distinct jobs (a rerun) are not copies: both are exported, and the document says their runs are pooled."""
    first, _ = _store(tmp_path / "a", gpus=("h100",), seed=1)
    second, _ = _store(tmp_path / "b", gpus=("h100",), seed=2)
    records = tmp_path / "records.csv"
    summary = export.export([first, second], ["kbx"], records, {"predictions": "geak"})
    assert summary["jobs"] == 2 * len(METHODS)
    findings_doc.generate(records, tmp_path / "FINDINGS.md")
    text = (tmp_path / "FINDINGS.md").read_text()
    assert "geak on h100 comes from 2 jobs: their task runs are pooled" in text


def test_check_finds_a_stale_document_and_passes_a_fresh_one(made, tmp_path):
    """`analysis findings --check` (what CI runs on the committed docs) writes nothing and finds a stale document."""
    import shutil

    from analysis.__main__ import main

    shutil.copytree(made["out"].parent, tmp_path / "docs")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert main(["findings", "--check"]) == 0
        document = tmp_path / findings_doc.DOCUMENT
        document.write_text(document.read_text().replace("agrees", "agreed", 1))
        plot = tmp_path / "docs" / "findings" / "deviance.png"
        plot.write_bytes(plot.read_bytes() + b"x")  # not checked: other renderers, other bytes
        assert main(["findings", "--check"]) == 1
        assert document.read_text().count("agreed") == 1  # --check wrote nothing
        assert main(["findings", "--check", "--records", str(tmp_path / "docs" / "findings" / "records.csv")]) == 2


@pytest.mark.skipif(not (REPO / findings_doc.RECORDS).is_file(), reason="no committed records yet (the GPU runs make them)")
def test_the_committed_findings_are_what_make_findings_writes():
    from analysis.__main__ import main

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        assert main(["findings", "--check"]) == 0, "docs/FINDINGS.md is stale: run `make findings` and commit it"


def test_tasks_without_a_stored_kernel_are_left_out_of_geak_figures_and_the_deviance(tmp_path):
    """Stored predictions cover only the corpus's tasks; kbx logs the rest as no_code (one round-0 attempt)."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    runs = bench.synthetic_runs(TASK_RUNS // 2, seed=SEED, methods=METHODS, hardware=("h100",))
    missing = set()
    for run in runs:
        task = run.params.get("task", "")
        if run.params.get("method") == "predictions" and task and int(task[-5:]) % 2 == 0:  # half the tasks
            missing.add(task)
            run.tags["kbx.status"] = "no_code"
            run.metrics = [("attempts", 1.0, 0), ("round_compiled", 0.0, 0), ("round_correct", 0.0, 0),
                           ("compiled", 0.0, 0), ("correct", 0.0, 0)]  # fmt: skip
    bench.fill(uri, "kbx", runs)
    records = tmp_path / "records.csv"
    export.export([uri], ["kbx"], records, {"predictions": "geak"})
    figs = findings.compute(export.read_records(records))["figures"]
    truth = _generated(runs)
    kept = truth[~truth["task"].isin(missing)]

    def value(key):
        return next(f for f in figs if f.key == key).value

    geak = kept[(kept["method"] == "geak") & (kept["round"] == 0)]
    assert value("geak_compile_best_r0") == pytest.approx(geak["compiled"].mean())
    final = kept[kept["round"] == LAST]
    quant = final[(final["method"] == "geak") & (final["category"] == "Quantization")]
    assert value("quantization_correct_geak") == pytest.approx(quant["correct"].mean())
    deviance_fig = next(f for f in figs if f.key == "method_explained")
    assert deviance_fig.task_runs == len(final) and f"{final['task'].nunique()} tasks" in deviance_fig.detail
