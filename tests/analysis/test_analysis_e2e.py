"""End to end: real kbx runs (CPU, rounds 0-2) into a fresh MLflow store, then `python -m analysis report`.

The predictions are built here from kbx's own expert kernels and broken variants, so the rounds
have a known shape: some tasks fail to compile in round 0 and are rescued later, as in the
paper's GEAK runs. The second half evaluates the whole shared GEAK corpus (every line whose task
kbx has; skipped when ../shared is absent) and checks the report against figures computed here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import CORPUS, REPO

pytestmark = pytest.mark.e2e

EXPERIMENT = "analysis-e2e"
ROUNDS = 3
BROKEN = "def oops(:\n"  # a syntax error: not compiled
NO_KERNEL = "import torch\n\ndef {entry}(*args, **kwargs):\n    return torch.zeros(1)\n"  # compiles, no Triton
# task -> what the "geak" predictions hold in rounds 0, 1, 2 (expert, broken, no_kernel or absent)
PLAN = {
    "Math/add": ("expert", None, None),
    "Activation/gelu": ("expert", None, None),
    "Reduce/sum": ("broken", "expert", None),
    "Loss/mse_loss": ("broken", "broken", "expert"),
    "Fusion/fused_add_gelu": ("no_kernel", "no_kernel", "no_kernel"),
    "Index/index_select": (None, "expert", None),
}


def _code(task: str, kind: str) -> str:
    if kind == "expert":
        return (REPO / "tasks" / task / "expert.py").read_text()
    if kind == "broken":
        return BROKEN
    return NO_KERNEL.format(entry=task.split("/")[1])


def predictions(path: Path) -> Path:
    lines = [{"task": task, "round": k, "predict": _code(task, kind)}
             for task, kinds in PLAN.items() for k, kind in enumerate(kinds) if kind]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def kbx_run(kbx_cli, tmp_path: Path, uri: str, *overrides: str, env=None) -> None:
    tasks = "task=[" + ",".join(PLAN) + "]"
    code, out, err = kbx_cli("kbx.run", tasks, "hardware=cpu", f"experiment={EXPERIMENT}", f"tracking_uri={uri}",
                             f"hydra.run.dir={tmp_path / 'hydra'}", *overrides, env=env)  # fmt: skip
    assert code == 0, (out + err)[-3000:]


def cli(*args, env=None, timeout=600):
    """Run a module of the repo as a subprocess; returns (returncode, stdout, stderr)."""
    full = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=full, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store with a reference job and a 3-round predictions job named geak, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("analysis-e2e")
    uri = f"sqlite:///{tmp}/mlflow.db"
    kbx_run(cli, tmp, uri, "method=reference", "iteration.rounds=1")
    preds = predictions(tmp / "preds.jsonl")
    kbx_run(cli, tmp, uri, "method=predictions", "method.name=geak", f"iteration.rounds={ROUNDS}",
            env={"KBX_PREDICTIONS": str(preds)})  # fmt: skip
    out = tmp / "report"
    code, stdout, stderr = cli("analysis", "report", "--experiment", EXPERIMENT, "--tracking-uri", uri, "--out", str(out))
    assert code == 0, (stdout + stderr)[-3000:]
    return uri, out, json.loads(stdout)


def test_report_writes_every_file(store):
    uri, out, summary = store
    for name in ("runs.csv", "outcomes.csv", "deviance.json", "headline.json", "report.md"):
        assert (out / name).is_file(), name
    for name in ("trajectory", "category_correctness", "speedup_distribution", "fast_p"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 0
    for name in ("category_method", "fast_p", "speedup_distribution", "trajectory", "transitions", "cross_hardware",
                 "quantization", "failing_all_methods"):  # fmt: skip
        assert (out / "tables" / f"{name}.csv").is_file() and (out / "tables" / f"{name}.md").is_file()
    text = (out / "report.md").read_text()
    assert "9.4%" in text and "3.3%" in text and "0/30" in text and "21.40x" in text
    assert "no kernel was timed" in text  # CPU: correctness only, and the report says so
    assert summary["task_runs"] == 2 * len(PLAN) and summary["jobs"] == 2


def test_runs_csv_is_tidy_and_complete(store):
    _, out, _ = store
    runs = pd.read_csv(out / "runs.csv")
    keys = ["method", "task", "round", "hardware", "seed"]
    assert not runs.duplicated(keys).any()
    geak = runs[runs["method"] == "geak"]
    assert len(geak) == len(PLAN) * ROUNDS  # skipped rounds are filled: every task has rounds 0-2
    assert len(runs[runs["method"] == "reference"]) == len(PLAN)  # the reference job has a single round
    assert set(runs["hardware"]) == {"cpu"} and not runs["timed"].any()


def test_rounds_show_the_papers_direction(store):
    """Compile and correct rates rise over rounds and some kernels are rescued (the paper's GEAK finding)."""
    _, out, _ = store
    traj = pd.read_csv(out / "tables" / "trajectory.csv")
    geak = traj[traj["method"] == "geak"].sort_values("round")
    assert list(geak["round"]) == [0, 1, 2]
    assert geak["compile_rate"].tolist() == pytest.approx([3 / 6, 5 / 6, 6 / 6])
    assert geak["correct_rate"].tolist() == pytest.approx([2 / 6, 4 / 6, 5 / 6])
    trans = pd.read_csv(out / "tables" / "transitions.csv")
    geak_t = trans[trans["method"] == "geak"].sort_values("round")
    assert geak_t["rescued"].tolist() == [2, 1] and geak_t["persistent"].tolist() == [2, 4]
    heads = {h["claim"]: h for h in json.loads((out / "headline.json").read_text())}
    first = heads["GEAK compile rate, first round, best so far (geak)"]
    last = heads["GEAK compile rate, last round, best so far (geak)"]
    assert last["kbx"] > first["kbx"]
    assert heads["GEAK mean speedup of correct kernels, last round (geak)"]["kbx"] is None  # untimed on CPU
    fusion = heads["Fusion tasks failing under every method"]
    assert fusion["kbx"] == 0.0 and fusion["source"]["task_runs"] == 2


def test_deviance_json_agrees_with_an_independent_fit(store):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    _, out, _ = store
    dev = json.loads((out / "deviance.json").read_text())
    runs = pd.read_csv(out / "runs.csv")
    final = runs[runs["final"]].assign(correct=lambda d: d["correct"].fillna(0))  # best so far, as shipped
    assert dev["n"] == len(final) == 2 * len(PLAN)

    def explained(formula: str) -> float:
        m = smf.glm(formula, data=final, family=sm.families.Binomial()).fit()
        return 1 - m.deviance / m.null_deviance

    assert dev["category"]["explained_deviance"] == pytest.approx(explained("correct ~ C(category)"), abs=1e-6)
    assert dev["method"]["explained_deviance"] == pytest.approx(explained("correct ~ C(method)"), abs=1e-6)
    full = smf.glm("correct ~ C(category) + C(method)", data=final, family=sm.families.Binomial()).fit()
    assert dev["full"]["explained_deviance"] == pytest.approx(1 - full.deviance / full.null_deviance, abs=1e-6)


def test_analysis_run_is_logged_and_ignored_by_the_next_report(store, tmp_path):
    from mlflow.tracking import MlflowClient

    from analysis import load

    uri, out, summary = store
    client = MlflowClient(uri)
    run = client.get_run(summary["analysis_run_id"])
    assert run.data.tags["kbx.role"] == "analysis"
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"report.md", "deviance.json", "runs.csv"}
    frame, selection = load.load(uri, EXPERIMENT)
    assert selection.n_task_runs == 2 * len(PLAN)
    portable, _ = load.load(uri, EXPERIMENT, bulk=False)  # the public-API path gives the same frame
    pd.testing.assert_frame_equal(frame, portable)
    only_geak, _ = load.load(uri, EXPERIMENT, "params.method = 'geak'")
    assert set(only_geak["method"]) == {"geak"}
    by_parent, _ = load.load(uri, EXPERIMENT, f"params.iteration = '{ROUNDS}'")  # a job parameter selects its tasks
    assert set(by_parent["method"]) == {"geak"}


def test_export_and_findings_over_real_cpu_runs(store, tmp_path):
    """The findings pipeline on the real CLI: the store -> records CSV -> FINDINGS.md, with the CPU's limits said."""
    uri, _, _ = store
    records, doc = tmp_path / "docs" / "findings" / "records.csv", tmp_path / "docs" / "FINDINGS.md"
    code, out, err = cli("analysis", "export", uri.removeprefix("sqlite:///"), "--experiment", EXPERIMENT,
                         "--out", str(records))  # fmt: skip
    assert code == 0, (out + err)[-3000:]
    assert json.loads(out)["rows"] == len(PLAN) * (1 + ROUNDS)  # reference: one round; geak: three
    code, out, err = cli("analysis", "findings", "--records", str(records), "--out", str(doc))
    assert code == 0, (out + err)[-3000:]
    text = doc.read_text()
    assert "| GEAK compile rate after round 0, best so far | cpu | 52.3% | 50.0% |" in text  # 3 of 6, as above
    assert f"| GEAK compile rate after round {ROUNDS - 1}, best so far | cpu | 68.8% | 100.0% |" in text
    assert "no timed kernels (CPU runs check correctness only)" in text
    assert "the records hold one GPU (cpu): the cross-GPU spread cannot be computed" in text
    code, _, err = cli("analysis", "findings", "--records", str(tmp_path / "none.csv"), "--out", str(doc))
    assert code == 2 and err.strip().startswith("analysis: no records file at") and len(err.strip().splitlines()) == 1


# ----- the shared GEAK corpus, every line whose task kbx has ---------------------------------------

CORPUS_EXPERIMENT = "geak-corpus-e2e"
CPU_ONLY_FAILURES = {"unsupported_on_cpu", "timeout"}  # the Triton interpreter's limits, not the kernel's
# The interpreter runs a kernel's out-of-bounds stores on the host's own heap: Loss/nll_loss's kernels write
# their 'none' output (an extra case since nll_loss v2) at the wrong index, so on the CPU their verdicts
# vary from run to run (ok, a crash, a mismatch on a later case whose data they overwrote); on an H100
# both rounds are ok (docs/FIDELITY.md).
CPU_HEAP_CORRUPTERS = {"Loss/nll_loss"}
# GPU-sized base of the check timeout (x5 under the interpreter: 60 s): one corpus kernel never finishes
# (Fusion/fused_sigmoid_adaptive_avg_pool2d, round 1) and held the run 300 s at the default.
CORPUS_CHECK_TIMEOUT_S = 12


@dataclasses.dataclass(frozen=True)
class CorpusRun:
    out: Path  # the report directory
    job: str  # the kbx job's MLflow run id
    tasks: list[str]  # corpus tasks kbx has
    lines: dict[tuple[str, int], int]  # (task, round) -> corpus line number
    upstream: dict[int, dict]  # corpus line number -> upstream's verdict
    records: pd.DataFrame  # the job's records.jsonl: one row per judged attempt
    seconds: float  # kbx.run plus the report


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> CorpusRun:
    """`kbx.run method=predictions method.name=geak` over the whole corpus (rounds 0-2, CPU), then the report.

    About 4 minutes on 2 CPU cores; one round-1 kernel of Fusion/fused_sigmoid_adaptive_avg_pool2d
    never finishes and is cut at CORPUS_CHECK_TIMEOUT_S.
    """
    from mlflow.tracking import MlflowClient

    from kbx.methods.predictions import task_id_of
    from kbx.tasks.registry import discover

    if not CORPUS.is_file():
        pytest.skip(f"the shared GEAK corpus is absent ({CORPUS})")
    known = set(discover())
    parsed = [(n, json.loads(t)) for n, t in enumerate(CORPUS.read_text().splitlines(), start=1) if t.strip()]
    kept = {n: line for n, line in parsed if task_id_of(line) in known}
    if not kept:
        pytest.skip("kbx has none of the corpus tasks")
    lines = {(task_id_of(line), line.get("round", 0)): n for n, line in kept.items()}
    assert len(lines) == len(kept), "two corpus lines for one task and round"
    tasks = sorted({task for task, _ in lines})
    tmp = tmp_path_factory.mktemp("geak-corpus")
    uri = f"sqlite:///{tmp}/mlflow.db"
    start = time.perf_counter()
    code, out, err = cli("kbx.run", "method=predictions", "method.name=geak", f"iteration.rounds={ROUNDS}", "hardware=cpu",
                         f"experiment={CORPUS_EXPERIMENT}", f"tracking_uri={uri}", f"hydra.run.dir={tmp / 'hydra'}",
                         "task=[" + ",".join(tasks) + "]", "eval.secret_seed=false",  # the same inputs every run
                         f"eval.check_timeout_s={CORPUS_CHECK_TIMEOUT_S}",
                         env={"KBX_PREDICTIONS": str(CORPUS)}, timeout=1500)  # fmt: skip
    assert code == 0, (out + err)[-3000:]
    report = tmp / "report"
    code, out, err = cli("analysis", "report", "--experiment", CORPUS_EXPERIMENT, "--tracking-uri", uri,
                         "--out", str(report), "--no-log")  # fmt: skip
    assert code == 0, (out + err)[-3000:]
    seconds = time.perf_counter() - start
    jobs = pd.read_csv(report / "runs.csv")["job_run_id"].unique()
    assert len(jobs) == 1, jobs
    path = MlflowClient(uri).download_artifacts(jobs[0], "records.jsonl", str(tmp))
    records = pd.DataFrame([json.loads(t) for t in Path(path).read_text().splitlines() if t.strip()])
    records["line"] = records["label"].str.extract(r"/line(\d+)$", expand=False).astype(int)
    upstream = {n: line.get("upstream", {}) for n, line in kept.items()}
    return CorpusRun(report, jobs[0], tasks, lines, upstream, records, seconds)


def direct(run: CorpusRun) -> pd.DataFrame:
    """Per task x round, from runs.csv's round_* columns (each round's own attempt; not the best-so-far
    columns, nor analysis.tables).

    tried: the task had an attempt that round; compiled/correct: that attempt's verdict; ever_*: any
    attempt up to and including that round; tried_before: any attempt in an earlier round.
    """
    runs = pd.read_csv(run.out / "runs.csv")
    runs = runs[runs["method"] == "geak"].sort_values(["task", "round"])
    out = runs[["task", "round"]].copy()
    out["tried"] = runs["attempts"].to_numpy() > 0
    for key in ("compiled", "correct"):
        out[key] = out["tried"] & (runs[f"round_{key}"].fillna(0).to_numpy() > 0)
        out[f"ever_{key}"] = out.groupby("task")[key].cummax()
    out["tried_before"] = out.groupby("task")["tried"].transform(lambda s: s.shift(fill_value=False).cummax())
    return out.reset_index(drop=True)


def rates(d: pd.DataFrame) -> pd.DataFrame:
    """Best-so-far rates over every task, and each round's own rates over the tasks tried that round."""
    tried = d[d["tried"]]
    return pd.DataFrame({"runs": d.groupby("round").size(), "attempted": tried.groupby("round").size(),
                         "compile_rate": d.groupby("round")["ever_compiled"].mean(),
                         "correct_rate": d.groupby("round")["ever_correct"].mean(),
                         "round_compile_rate": tried.groupby("round")["compiled"].mean(),
                         "round_correct_rate": tried.groupby("round")["correct"].mean()})  # fmt: skip


def changes(d: pd.DataFrame) -> pd.DataFrame:
    """Per round k >= 1: rescued (correct by k, not by k-1), those with no attempt before k, persistent."""
    prev = d.groupby("task")["ever_correct"].shift()
    now = d.assign(prev=prev)[prev.notna()]
    rescued = now["ever_correct"] & ~now["prev"].astype(bool)
    return pd.DataFrame({"rescued": rescued.groupby(now["round"]).sum(),
                         "rescued_untried_before": (rescued & ~now["tried_before"]).groupby(now["round"]).sum(),
                         "persistent": now["prev"].astype(bool).groupby(now["round"]).sum()}).astype(int)  # fmt: skip


def test_corpus_run_judges_every_line_kbx_has(corpus):
    """One attempt per corpus line of a task kbx has (86 of the 120 lines, 38 tasks), in the line's round."""
    recs = corpus.records
    assert sorted(recs["line"]) == sorted(corpus.lines.values())
    assert {(t, r): n for t, r, n in recs[["task", "round", "line"]].itertuples(index=False)} == corpus.lines
    d = direct(corpus)
    assert sorted(d["task"].unique()) == corpus.tasks and set(d.groupby("task").size()) == {ROUNDS}
    assert {(t, r) for t, r in d.loc[d["tried"], ["task", "round"]].itertuples(index=False)} == set(corpus.lines)
    for flag in ("compiled", "correct"):  # runs.csv's per-round verdicts are the records' verdicts
        logged = {(t, r) for t, r in d.loc[d[flag], ["task", "round"]].itertuples(index=False)}
        assert logged == {(t, r) for t, r in recs.loc[recs[flag], ["task", "round"]].itertuples(index=False)}, flag
    print(f"\ncorpus run: {len(recs)} lines, {len(corpus.tasks)} tasks, kbx.run + report {corpus.seconds:.0f} s")


def test_corpus_best_so_far_rates_rise_as_in_the_paper(corpus):
    """The paper's direction, best so far: compile 52.3% -> 68.8% after GEAK's rounds; kbx's rates rise too.

    trajectory.csv equals the rates computed here from runs.csv's per-round verdicts. Best-so-far
    rates cannot fall; they end strictly above round 0 because some kernels are rescued (correct)
    or first compile (compile) in a later round. What the rise is made of is in the next tests.
    """
    traj = pd.read_csv(corpus.out / "tables" / "trajectory.csv").set_index("round").sort_index()
    mine = rates(direct(corpus))
    assert list(traj.index) == list(range(ROUNDS))
    for col in mine.columns:
        assert traj[col].to_numpy(float) == pytest.approx(mine[col].to_numpy(float)), col
    for col in ("compile_rate", "correct_rate"):
        assert traj[col].is_monotonic_increasing, col
        assert traj[col].iloc[-1] > traj[col].iloc[0], col
    assert traj["timed"].eq(0).all() and traj["mean_speedup"].isna().all()  # CPU: no speedup direction to test


def test_corpus_rescued_and_persistent_kernels(corpus):
    """transitions.csv against a direct count; rescues happen, and kbx's rescues are upstream's too.

    persistent(k) is every kernel correct by round k-1 (best so far never loses one), so it grows
    by the rescues: 7 -> 10 on this corpus (give or take Loss/nll_loss, whose CPU verdicts vary). Rescues come in the first transition (3 at 0->1, none
    at 1->2); one of the three (MatrixMultiply/tril_mm_and_scale) has no round-0 line in the corpus,
    so it was missing, not failing, before. Each kernel kbx rescues after a failing attempt is one
    whose upstream verdict also went from exe fail to exe pass (Fusion/fused_add_mean,
    Fusion/fused_qr_solve). The paper's rescued-vs-persistent finding is about speedups (1.16x
    against 1.58x), which the CPU cannot measure: those columns stay empty.
    """
    trans = pd.read_csv(corpus.out / "tables" / "transitions.csv").set_index("round").sort_index()
    d = direct(corpus)
    mine = changes(d)
    assert list(trans.index) == list(range(1, ROUNDS))
    for col in mine.columns:
        assert trans[col].tolist() == mine[col].tolist(), col
    correct_by = d.groupby("round")["ever_correct"].sum()
    assert trans["persistent"].tolist() == correct_by.iloc[:-1].tolist()  # correct by k-1 stays correct
    assert trans["rescued"].sum() > 0 and trans["rescued"].iloc[0] >= trans["rescued"].iloc[-1]
    assert trans[["rescued_timed", "persistent_timed"]].eq(0).all().all()
    assert trans[["rescued_mean_speedup", "persistent_mean_speedup"]].isna().all().all()
    prev = d.groupby("task")["ever_correct"].shift().fillna(True).astype(bool)
    genuine = d[d["ever_correct"] & ~prev & d["tried_before"] & ~d["task"].isin(CPU_HEAP_CORRUPTERS)]  # rescued
    # after an attempt of their own failed (CPU_HEAP_CORRUPTERS' CPU verdicts vary from run to run)
    assert len(genuine) > 0
    for task, k in genuine[["task", "round"]].itertuples(index=False):
        earlier = [corpus.lines[(task, r)] for r in range(k) if (task, r) in corpus.lines]
        assert not any(corpus.upstream[n].get("exe_ok") for n in earlier), task
        assert corpus.upstream[corpus.lines[(task, k)]].get("exe_ok"), task


def test_corpus_per_round_rates_do_not_rise(corpus):
    """Where the corpus contradicts the paper's direction: each round's own attempts do not improve.

    Per-round correct rate falls from round 0 to round 1 (24.1% or 27.6% -> 18.4%, 21.1% at round 2),
    because four kernels correct in one round are not in their next: Activation/leaky_relu,
    Activation/sigmoid, Math/exp_sqrt (round 1) and Math/sqrt_exp (round 2). Every one of those later
    kernels fails only on the CPU (unsupported_on_cpu in the Triton interpreter) and passes upstream's
    exe test, so this is a limit of the CPU run, not evidence that GEAK's rounds made kernels worse.
    (Loss/nll_loss's kernels corrupt memory on the CPU, CPU_HEAP_CORRUPTERS: round 0 is correct in
    some runs, hence the two round-0 rates, and its round-1 verdict varies; they are left out.)
    Per-round compile rate is flat (96.6 / 97.4 / 94.7%): the only kernels that do not compile are
    Math/erf's, whose corpus lines have their newlines collapsed (a syntax error in every round).
    So the best-so-far compile rise (73.7% -> 97.4%) comes entirely from the 9 tasks the corpus
    has no round-0 line for (upstream logged a round only where its kernel changed), which count
    as not compiled until their first line: no task tried in round 0 compiles later and not then.
    Note also that kbx's "compiled" (the module imports) is far looser than the paper's compile
    stage, and the corpus is a biased sample of GEAK's output, so the levels are not comparable.
    """
    traj = pd.read_csv(corpus.out / "tables" / "trajectory.csv").set_index("round").sort_index()
    assert traj.loc[1, "round_correct_rate"] < traj.loc[0, "round_correct_rate"]
    assert traj["round_correct_rate"].iloc[-1] < traj["round_correct_rate"].iloc[0]
    recs = corpus.records.set_index(["task", "round"]).sort_index()
    regressions = []
    for task in sorted(set(corpus.tasks) - CPU_HEAP_CORRUPTERS):
        tried = [r for r in range(ROUNDS) if (task, r) in corpus.lines]
        regressions += [(task, b) for a, b in zip(tried, tried[1:]) if recs.loc[(task, a), "correct"]
                        and not recs.loc[(task, b), "correct"]]  # fmt: skip
    assert regressions, "no per-round regression: update this test's docstring"
    for task, k in regressions:
        assert recs.loc[(task, k), "status"] in CPU_ONLY_FAILURES, (task, k, recs.loc[(task, k), "status"])
        assert corpus.upstream[corpus.lines[(task, k)]].get("exe_ok"), (task, k)
    assert set(corpus.records.loc[~corpus.records["compiled"], "status"]) <= {"syntax_error"}
    d = direct(corpus)
    first_tried = d[d["tried"]].groupby("task")["round"].min()
    early = d[d["task"].isin(first_tried[first_tried == 0].index)]
    assert (early.groupby("task")["ever_compiled"].agg(lambda s: s.iloc[0] == s.iloc[-1])).all()
    gain = rates(d)["compile_rate"].iloc[-1] - rates(d)["compile_rate"].iloc[0]
    late = d[d["task"].isin(first_tried[first_tried > 0].index) & (d["round"] == ROUNDS - 1)]
    assert gain == pytest.approx(late["ever_compiled"].sum() / len(corpus.tasks)) and gain > 0


def test_corpus_headline_names_its_figures_and_runs(corpus):
    """headline.json and report.md: kbx's compile rates beside the paper's 52.3% / 68.8%, with their runs."""
    heads = {h["claim"]: h for h in json.loads((corpus.out / "headline.json").read_text())}
    traj = pd.read_csv(corpus.out / "tables" / "trajectory.csv").set_index("round").sort_index()
    text = (corpus.out / "report.md").read_text()
    first, last = 0, ROUNDS - 1
    expected = {  # claim -> (paper, kbx, task runs behind it)
        "GEAK compile rate, first round, best so far (geak)": (0.523, traj.loc[first, "compile_rate"], len(corpus.tasks)),
        "GEAK compile rate, last round, best so far (geak)": (0.688, traj.loc[last, "compile_rate"], len(corpus.tasks)),
        "GEAK compile rate, first round's own attempts (geak)": (0.523, traj.loc[first, "round_compile_rate"],
                                                                 traj.loc[first, "attempted"]),
        "GEAK compile rate, last round's own attempts (geak)": (0.688, traj.loc[last, "round_compile_rate"],
                                                                traj.loc[last, "attempted"]),
    }  # fmt: skip
    for claim, (paper, kbx, task_runs) in expected.items():
        h = heads[claim]
        assert h["paper"] == paper and h["kbx"] == pytest.approx(kbx) and h["why_missing"] is None, claim
        assert h["source"]["jobs"] == [corpus.job] and h["source"]["task_runs"] == task_runs, claim
        row = next(line for line in text.splitlines() if line.startswith(f"| {claim} |"))
        assert f"| {paper:.1%} | {kbx:.1%} |" in row and corpus.job[:8] in row, row
    rescued = heads["GEAK mean speedup of kernels rescued by a later round (geak)"]
    trans = pd.read_csv(corpus.out / "tables" / "transitions.csv")
    assert rescued["kbx"] is None and "no timed kernels" in rescued["why_missing"]
    assert rescued["source"]["task_runs"] == trans["rescued"].sum()  # each kernel is rescued once
    late = (~direct(corpus).groupby("task")["tried"].first()).sum()
    assert f"geak: {late} of {len(corpus.tasks)} task runs have no round-0 attempt" in text
