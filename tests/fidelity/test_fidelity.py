"""`python -m kbx.fidelity`: kbx's verdicts on the GEAK corpus beside upstream's, every disagreement with a cause."""

from __future__ import annotations

import json

import pytest

from kbx.fidelity import causes
from kbx.fidelity.causes import classify
from kbx.tasks.registry import discover
from tests.conftest import CORPUS

needs_corpus = pytest.mark.skipif(not CORPUS.is_file(), reason="shared corpus not present")

# Corpus lines judged for real on the CPU: an honest kernel (leaky_relu), torch-only code upstream
# accepts (eig, spectral_norm_eig), and a record that lost its line breaks after upstream judged it (erf).
LINES = {1: None, 50: causes.TORCH_FALLBACK, 67: causes.MANGLED, 106: causes.TORCH_FALLBACK}


def record(task: str, status: str, correct: bool = False, **fields) -> dict:
    return {"line": 1, "task": task, "status": status, "correct": correct, "compiled": True, "reason": "",
            "mismatch": {}, **fields}  # fmt: skip


@pytest.fixture(scope="module")
def tasks():
    return discover()


def test_kbx_rejects_causes(tasks):
    relu = tasks["Activation/relu"]
    assert classify(record("Activation/relu", "no_triton"), True, relu, "x = 1\n") is causes.TORCH_FALLBACK
    assert classify(record("Activation/relu", "decoy_kernel"), True, relu, "x = 1\n") is causes.TORCH_FALLBACK
    long_line = "import torch " * 40
    assert classify(record("Activation/relu", "syntax_error"), True, relu, long_line) is causes.MANGLED
    assert classify(record("Activation/relu", "syntax_error"), True, relu, "def f(:\n    pass\n") is causes.UNEXPLAINED
    extra = record("Activation/relu", "mismatch", mismatch={"case": "standard_inplace", "count": 1})
    assert classify(extra, True, relu, "") is causes.EXTRA_CASE
    perf = record("Activation/relu", "mismatch", mismatch={"case": relu.spec.perf[0].name, "count": 1})
    assert classify(perf, True, relu, "") is causes.PERF_SHAPE
    contract = record("Activation/relu", "mismatch", mismatch={"case": "standard", "count": 1})
    assert classify(contract, True, relu, "") is causes.UNEXPLAINED
    assert classify(record("Activation/relu", "timeout"), True, relu, "") is causes.TIMEOUT
    assert classify(record("Activation/relu", "no_entry"), True, relu, "") is causes.ENTRY_CONTRACT
    signature = record("Activation/relu", "runtime_error", error_type="TypeError",
                       message="relu() got an unexpected keyword argument 'inplace'")  # fmt: skip
    assert classify(signature, True, relu, "") is causes.ENTRY_CONTRACT
    assert classify(record("Activation/relu", "input_mutated"), True, relu, "") is causes.INPUT_WRITTEN


def test_rejections_traced_on_the_h100_corpus_run(tasks):
    """The causes the H100 run of 2026-11-27 needed (docs/FIDELITY.md): a torch fallback that failed a
    case before the no-Triton check, an output left unwritten, fp64 computed in fp32, a kbx extra case."""
    relu, logspace, nll = tasks["Activation/relu"], tasks["Random/logspace"], tasks["Loss/nll_loss"]
    standard = {"case": "standard", "count": 1}
    torch_only = record("Activation/relu", "mismatch", triton_launches=0, cases_passed=3, mismatch=standard)
    assert classify(torch_only, True, relu, "") is causes.TORCH_FALLBACK
    launched = record("Activation/relu", "mismatch", triton_launches=2, cases_passed=3, mismatch=standard)
    assert classify(launched, True, relu, "") is causes.UNEXPLAINED
    unwritten = record("Activation/relu", "unwritten_output", triton_launches=2, cases_passed=1, mismatch=standard)
    assert classify(unwritten, True, relu, "") is causes.UNWRITTEN
    fp64 = {"case": "fixed_float64", "count": 1, "max_abs_err": 6.58e-6, "max_rel_err": 3.06e-7}
    assert classify(record("Random/logspace", "mismatch", triton_launches=1, mismatch=fp64), True, logspace,
                    "") is causes.FP64_LOOSE  # fmt: skip
    far = {**fp64, "max_abs_err": 0.5, "max_rel_err": 0.02}
    assert classify(record("Random/logspace", "mismatch", triton_launches=1, mismatch=far), True, logspace,
                    "") is causes.UNEXPLAINED  # fmt: skip
    fp32 = {**fp64, "case": "fixed_base10"}
    assert classify(record("Random/logspace", "mismatch", triton_launches=1, mismatch=fp32), True, logspace,
                    "") is causes.UNEXPLAINED  # fmt: skip
    none = record("Loss/nll_loss", "unwritten_output", triton_launches=4, mismatch={"case": "fixed_none_weighted"})
    assert classify(none, True, nll, "") is causes.EXTRA_CASE


def test_kbx_accepts_causes(tasks):
    entry = "def relu(input, inplace=False):\n    return input\n"
    assert classify(record("Activation/relu", "ok", True), True, tasks["Activation/relu"], entry) is causes.UNEXPLAINED
    svd = "def svd(A, full_matrices=True):\n    return A\n"
    assert classify(record("LinearAlgebra/svd", "ok", True), True, tasks["LinearAlgebra/svd"], svd) is causes.NON_UNIQUE
    conditional = "import torch\nif True:\n    def relu(input, inplace=False):\n        return input\n"
    assert classify(record("Activation/relu", "ok", True), True, tasks["Activation/relu"],
                    conditional) is causes.UPSTREAM_ENTRY_CHECK  # fmt: skip
    orphan = tasks["Activation/relu_fp16"]
    assert classify(record(orphan.id, "ok", True), True, orphan, "def relu_fp16(x):\n    pass\n") is causes.ORPHAN
    matmul = tasks["MatrixMultiply/matmul"]
    assert classify(record(matmul.id, "ok", True), True, matmul, "def matmul(a, b):\n    pass\n") is causes.TF32_PRODUCTS
    bf16 = tasks["Activation/gelu_bf16"]
    assert classify(record(bf16.id, "ok", True), True, bf16, "def gelu_bf16(x):\n    pass\n") is causes.HALF_ULP
    failed_to_run = classify(record(matmul.id, "ok", True), False, matmul, "def matmul(a, b):\n    pass\n")
    assert failed_to_run is causes.UNEXPLAINED  # upstream's call stage failed: no comparison rule explains it
    assert causes.upstream_finds_entry("kernel_function = None\n", "relu")


@needs_corpus
@pytest.mark.e2e
def test_real_evaluation_of_corpus_lines_against_upstream(kbx_cli, tmp_path):
    """kbx.evaluate judges four corpus lines (the rest blanked, so line numbers stay the corpus's), then
    kbx.fidelity compares them with upstream's verdicts, under two labels as if from two GPUs."""
    raw = CORPUS.read_text(encoding="utf-8").splitlines()
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(text if n in LINES else "" for n, text in enumerate(raw, start=1)) + "\n")
    results = tmp_path / "cpu.json"
    code, _, err = kbx_cli("kbx.evaluate", str(subset), "--hardware", "cpu", "--json", str(results))
    assert code == 0, err[-2000:]
    statuses = {r["line"]: r["status"] for r in json.loads(results.read_text())}
    assert statuses[50] == statuses[106] == "no_triton" and statuses[67] == "syntax_error", statuses
    other = tmp_path / "other.json"
    other.write_text(results.read_text())
    out = tmp_path / "FIDELITY.md"
    code, stdout, err = kbx_cli("kbx.fidelity", f"cpu-a={results}", f"cpu-b={other}", "--corpus", str(CORPUS),
                                "--out", str(out))  # fmt: skip
    text = out.read_text()
    judged = [n for n in LINES if statuses[n] != "unsupported_on_cpu"]
    disagreeing = [n for n in judged if LINES[n] is not None]
    for n in disagreeing:
        assert f"| cpu-a | {n} | " in text and f"| {LINES[n].name} |" in text
    assert f"cpu-a: {len(judged) - len(disagreeing)} of {len(judged)} judged lines agree" in stdout
    assert "| cpu-b |" in text and "Generated by `python -m kbx.fidelity" in text
    assert code == 0, stdout + err  # every disagreement explained
    assert "| cpu-a | 1 | " not in text  # the agreeing line is no disagreement


@needs_corpus
def test_results_from_another_file_are_a_one_line_error(kbx_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([record("Math/add", "ok", True)]))  # line 1 of the corpus is leaky_relu
    out = tmp_path / "FIDELITY.md"
    code, _, err = kbx_cli("kbx.fidelity", str(bad), "--corpus", str(CORPUS), "--out", str(out))
    assert code == 2 and err.strip().startswith("kbx.fidelity: error:") and "does not match the corpus" in err
    assert not out.exists()
    bad.write_text("{not json")
    code, _, err = kbx_cli("kbx.fidelity", str(bad), "--corpus", str(CORPUS))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "invalid JSON" in err


@needs_corpus
@pytest.mark.gpu
def test_a_read_past_a_scalar_tensors_end_fails_on_the_gpu(tasks):
    """Corpus line 10 (GEAK fused_add_mean, round 0) makes its scalar `other` a one-element tensor and
    reads three elements of it. Upstream failed it; kbx passed it on an H100 while poisoning missed the
    cached free blocks of segments holding the task's inputs: its block still held an earlier case's
    [0.5, 0.5, 0.5] (kbx.sandbox.instrument)."""
    import torch

    from kbx.contract.attempt import Attempt
    from kbx.core.record import Status
    from kbx.driver.evaluator import EvalSettings, Evaluator
    from kbx.methods.predictions import read_predictions

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    (line,) = [p for p in read_predictions(CORPUS) if p.line == 10]
    assert (line.task, line.round) == ("Fusion/fused_add_mean", 0)
    with Evaluator(EvalSettings(device="cuda", workers=1)) as ev:
        (rec,) = ev.evaluate([Attempt(tasks[line.task], line.code, "corpus line 10")])
    assert rec.status is Status.MISMATCH, f"{rec.status.value}: {rec.reason}"
    assert "fixed_scalar_alpha" in rec.reason
