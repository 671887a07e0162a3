"""End-to-end runs of the real CLI (`python -m kbx.run`) into a temporary MLflow store."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from kbx.core import provenance

pytestmark = pytest.mark.e2e

SECRET = "sk-kbx-test-0123456789abcdefSECRET"
LEAKY_ADD = '''
import os, torch, triton, triton.language as tl
print("ENV", dict(os.environ))

@triton.jit
def _k(x, y, o, n, alpha, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + alpha * tl.load(y + i, mask=m), mask=m)

def add(input, other, alpha=1, out=None):
    if not isinstance(other, torch.Tensor):
        other = torch.full_like(input, float(other))
    x, y = torch.broadcast_tensors(input, other)
    x, y = x.contiguous(), y.contiguous()
    o = torch.empty_like(x)
    _k[(triton.cdiv(x.numel(), 1024),)](x, y, o, x.numel(), float(alpha), B=1024)
    return o
'''


def read_runs(uri: str, experiment: str):
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=[experiment, f"{experiment}-tasks"])  # jobs, and their task runs


def test_reference_gelu_logs_a_correct_child_run(kbx_cli, tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code, out, err = kbx_cli("kbx.run", "method=reference", "task=Activation/gelu", "hardware=cpu",
                             "experiment=e2e", f"tracking_uri={uri}")  # fmt: skip
    assert code == 0, err[-3000:]
    assert "Activation/gelu" in out and "correct 100.0%" in out
    runs = read_runs(uri, "e2e")
    child = runs[runs["params.task"] == "Activation/gelu"].iloc[0]
    parent = runs[runs["tags.kbx.role"] == "job"].iloc[0]
    assert child["metrics.correct"] == 1.0 and child["metrics.compiled"] == 1.0
    assert child["tags.mlflow.parentRunId"] == parent["run_id"]
    assert child["experiment_id"] != parent["experiment_id"]  # task runs live in the companion experiment
    assert parent["params.method"] == "reference" and parent["params.hardware"] == "cpu"
    assert parent["params.triton_version"] == importlib.metadata.version("triton")
    assert parent["tags.kbx.commit"] == provenance.kbx_commit()  # a tag: a job resumes after a fix
    assert parent["params.nvidia_driver_version"] == parent["params.cuda_runtime_version"] == ""  # the CPU's
    assert parent["metrics.suite/correct_rate"] == 1.0 and parent["metrics.suite/n_tasks"] == 1.0
    assert parent["tags.mlflow.runName"] == "reference | Activation/gelu | cpu | 3 rounds"  # the task picked, the budget (default 3)
    link = f"http://127.0.0.1:5000/#/experiments/{parent['experiment_id']}/runs?workflowType=machine_learning"
    assert f"Compare the jobs in the MLflow UI (start it with `make ui`): {link}&viewStateShareKey=kbx" in out
    import mlflow

    client = mlflow.tracking.MlflowClient(uri)
    artifacts = [a.path for a in client.list_artifacts(child["run_id"], "attempts")]
    assert artifacts == ["attempts/round0__expert.json", "attempts/round0__expert.py"]
    record = json.loads(Path(client.download_artifacts(child["run_id"], artifacts[0], str(tmp_path))).read_text())
    assert {k: record[k] for k in provenance.FIELDS} == provenance.collect(None)  # what judged it, in the record


def test_multirun_predictions_rounds_and_no_secret_leak(kbx_cli, tmp_path):
    """Round 0 fails to compile, round 1 is right: per-round steps show the rescue; the key never leaks."""
    preds = tmp_path / "preds.jsonl"
    rows = [{"task": "Math/add", "round": 0, "predict": "def add(:\n"},
            {"file": "Math/add.py", "round": 1, "predict": f"```python\n{LEAKY_ADD}\n```"},
            {"file": "Broadcast/expand.py", "round": 0, "predict": "x = 1"}]  # fmt: skip
    preds.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code, out, err = kbx_cli("kbx.run", "-m", "method=reference,predictions", "task=Math/add", "hardware=cpu",
                             "experiment=multi", f"tracking_uri={uri}",
                             env={"KBX_PREDICTIONS": str(preds), "OPENAI_API_KEY": SECRET})  # fmt: skip
    assert code == 0, err[-3000:]
    assert "line 3: unknown task 'Broadcast/expand'" in out + err
    runs = read_runs(uri, "multi")
    jobs = runs[runs["tags.kbx.role"] == "job"]
    assert sorted(jobs["params.method"]) == ["predictions", "reference"]
    import mlflow

    client = mlflow.tracking.MlflowClient(uri)
    child = runs[(runs["params.task"] == "Math/add") & (runs["params.method"] == "predictions")].iloc[0]
    assert [m.value for m in client.get_metric_history(child["run_id"], "compiled")] == [0.0, 1.0]
    assert [m.value for m in client.get_metric_history(child["run_id"], "correct")] == [0.0, 1.0]
    assert [m.value for m in client.get_metric_history(child["run_id"], "round_compiled")] == [0.0, 1.0]
    stored = b"".join(p.read_bytes() for p in Path(tmp_path).rglob("*") if p.is_file())
    assert b"ENV" in stored  # the candidate's printout was captured into its record...
    assert SECRET.encode() not in stored  # ...but the key never reached the worker, the logs or the store
    assert SECRET not in out + err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("method=nope", "Could not find 'method/nope'"),
        ("category=nope", "Could not find 'category/nope'"),
        ("iteration.rounds=0", "iteration.rounds: expected an integer >= 1, got 0"),
        ("task=Nope/thing", "unknown task(s) Nope/thing"),
        ("hardware=h100", "hardware=h100 was requested but"),
        ("method=predictions", "predictions file not found"),
        ("experiment=", "experiment: expected a non-empty string"),
        ("eval.memory_limit_gb=0.01", "eval.memory_limit_gb: expected a number >= 2"),
        ("eval.check_timeout_s=-5", "eval.check_timeout_s: expected a number > 0, got -5"),
        ("++method.path=preds.jsonl", "method.path: not a setting of method=reference (it belongs to method=predictions)"),
        ("tracking.traces=sometimes", "tracking.traces: expected true or false, got 'sometimes'"),
    ],
)
def test_bad_overrides_fail_before_any_work(kbx_cli, tmp_path, override, message):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code, out, err = kbx_cli("kbx.run", override, f"tracking_uri={uri}",
                             env={"KBX_PREDICTIONS": str(tmp_path / "absent.jsonl")})  # fmt: skip
    assert code != 0
    assert message in out + err and "Traceback" not in out + err
    assert not (tmp_path / "mlflow.db").exists(), "no run may be created for a bad configuration"
