"""Runs come home: `python -m kbx.sync` copies a node's local store into a real MLflow server, whole and once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracing.client import TracingClient
from mlflow.tracking import MlflowClient

from kbx.sync import main as sync_main
from kbx.tracking import traces
from kbx.tracking.sync import PENDING_TAG, SOURCE_TAG
from kbx.tracking.tracker import experiment_artifact_location
from tests.llm_results import CPU, trajectory
from tests.mlflow_server import ENV, free_port, start_mlflow_server, stop

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 3


def node_store(root: Path) -> tuple[str, dict[str, str]]:
    """A store laid out as kbx lays out mlruns/ on a node: a job run with two task runs under it
    (metric histories over rounds, nested artifacts, an LLM trajectory's trace), another experiment, and a
    job still running."""
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    (root / "mlruns").mkdir(parents=True)
    client = MlflowClient(tracking_uri=uri)
    kbx = client.create_experiment("kbx", artifact_location=experiment_artifact_location(uri, "kbx"))
    job = client.create_run(kbx, run_name="reference-h100", tags={"kbx.role": "job"}, start_time=1_700_000_000_000)
    ids = {"job": job.info.run_id}
    client.log_batch(ids["job"], params=[Param("method", "reference"), Param("hardware", "h100")],
                     metrics=[Metric("correct_rate", 0.5, 1_700_000_001_000, 0)])  # fmt: skip
    client.log_text(ids["job"], "method: reference\n", "config.yaml")
    for i, task in enumerate(["Activation/gelu", "Math/add"]):
        child = client.create_run(kbx, run_name=task, start_time=1_700_000_000_500 + i,
                                  tags={"mlflow.parentRunId": ids["job"], "kbx.role": "task"})  # fmt: skip
        run_id = ids[task] = child.info.run_id
        history = [Metric("speedup", 1.0 + step / 10 + i, 1_700_000_002_000 + step, step) for step in range(ROUNDS)]
        client.log_batch(run_id, params=[Param("task", task)], tags=[RunTag("note", f"task {i}")], metrics=history)
        client.log_text(run_id, f"kernel {i}\n", "round0/kernel.py")
        client.log_dict(run_id, {"correct": True, "round": i}, "result.json")
        client.set_terminated(run_id, "FINISHED" if i == 0 else "FAILED", end_time=1_700_000_003_000 + i)
    client.set_terminated(ids["job"], "FINISHED", end_time=1_700_000_004_000)
    ids["trace"] = traces.write(TracingClient(uri), *traces.task_trace(trajectory(), kbx, ids["Activation/gelu"], "geak", CPU))
    other = client.create_experiment("other", artifact_location=experiment_artifact_location(uri, "other"))
    running = client.create_run(other, run_name="still-running")
    ids["running"] = running.info.run_id
    client.log_param(ids["running"], "method", "geak")
    client.log_text(ids["running"], "method: geak\n", "config.yaml")
    client.create_run(other, run_name="under-running", tags={"mlflow.parentRunId": ids["running"]})  # no artifacts
    return uri, ids


def sync_cli(src: Path, dst: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **ENV}
    return subprocess.run([sys.executable, "-m", "kbx.sync", str(src), dst], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def copies(client: MlflowClient) -> dict[str, object]:
    """Source run id -> its copy, over every experiment of the destination."""
    experiments = [e.experiment_id for e in client.search_experiments()]
    return {r.data.tags[SOURCE_TAG]: r for r in client.search_runs(experiments) if SOURCE_TAG in r.data.tags}


def assert_same_run(src: MlflowClient, dst: MlflowClient, original, copy, artifacts: Path, tmp: Path) -> None:
    """`copy` has everything of `original`; `artifacts` is the original's artifact folder as carried."""
    assert copy.info.run_name == original.info.run_name
    assert (copy.info.status, copy.info.start_time, copy.info.end_time) == (
        original.info.status, original.info.start_time, original.info.end_time)  # fmt: skip
    assert copy.data.params == original.data.params
    expected_tags = {k: v for k, v in original.data.tags.items() if k != "mlflow.parentRunId"}
    assert {k: v for k, v in copy.data.tags.items() if k in expected_tags} == expected_tags
    for key in original.data.metrics:
        want = [(m.step, m.value, m.timestamp) for m in src.get_metric_history(original.info.run_id, key)]
        got = [(m.step, m.value, m.timestamp) for m in dst.get_metric_history(copy.info.run_id, key)]
        assert sorted(got) == sorted(want), key
    a = artifacts
    b = Path(dst.download_artifacts(copy.info.run_id, "", str(tmp / original.info.run_id)))
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_runs_come_home_whole_and_once(tmp_path, capsys):
    node, home = tmp_path / "node", tmp_path / "home"
    _, ids = node_store(node)
    carried = tmp_path / "carried"  # brought home to another path: the store's artifact paths are stale
    shutil.copytree(node, carried)
    shutil.rmtree(node)
    home.mkdir()
    port = free_port()
    server = start_mlflow_server(home, port)
    dst_uri = f"http://127.0.0.1:{port}"
    try:
        dst = MlflowClient(tracking_uri=dst_uri)
        # An earlier import cut short: a copy of the job that never got its source tag.
        kbx = dst.create_experiment("kbx")
        dst.create_run(kbx, run_name="reference-h100", tags={PENDING_TAG: ids["job"]})

        first = sync_cli(carried / "mlruns", dst_uri)
        assert first.returncode == 0, first.stderr
        assert "kbx: 3 runs imported, 0 already there, 0 not ended yet (left for later), 1 unfinished" in first.stdout
        assert "other: 0 runs imported, 0 already there, 2 not ended yet" in first.stdout

        src = MlflowClient(tracking_uri=f"sqlite:///{carried / 'mlruns' / 'mlflow.db'}")
        copied = copies(dst)
        assert set(copied) == {ids["job"], ids["Activation/gelu"], ids["Math/add"]}
        for name in ("job", "Activation/gelu", "Math/add"):
            folder = carried / "mlruns" / "artifacts" / "kbx" / ids[name] / "artifacts"  # kbx's sqlite layout
            assert_same_run(src, dst, src.get_run(ids[name]), copied[ids[name]], folder, tmp_path / "downloads")
        job_copy = copied[ids["job"]].info.run_id
        assert all(copied[ids[t]].data.tags["mlflow.parentRunId"] == job_copy for t in ("Activation/gelu", "Math/add"))
        assert not any(PENDING_TAG in r.data.tags for r in copied.values())
        (trace,) = dst.search_traces(locations=[kbx], run_id=copied[ids["Activation/gelu"]].info.run_id)
        original = src.get_trace(ids["trace"])
        assert trace.info.tags[traces.SOURCE_TRACE_TAG] == ids["trace"]
        assert sorted(s.name for s in trace.data.spans) == sorted(s.name for s in original.data.spans)
        assert len(trace.info.assessments) == len(original.info.assessments) == 5
        live = dst.search_runs([kbx])
        assert len(live) == 3, "the interrupted copy was deleted, nothing else added"

        assert sync_main([str(carried / "mlruns"), dst_uri]) == 0  # in-process from here on: quicker
        assert "kbx: 0 runs imported, 3 already there" in capsys.readouterr().out
        assert sorted(r.info.run_id for r in dst.search_runs([kbx])) == sorted(r.info.run_id for r in live)

        # The running job ends on the node: the next import brings it and the run under it, and only them.
        for run in src.search_runs([src.get_experiment_by_name("other").experiment_id]):
            src.set_terminated(run.info.run_id, "KILLED")
        assert sync_main([str(carried / "mlruns"), dst_uri]) == 0
        third = capsys.readouterr().out
        assert "other: 2 runs imported, 0 already there, 0 not ended yet" in third
        assert "kbx: 0 runs imported, 3 already there" in third
        assert len(copies(dst)) == 5
    finally:
        stop(server)


def test_bad_source_is_one_line_error(tmp_path):
    proc = sync_cli(tmp_path / "nowhere", "sqlite:///" + str(tmp_path / "dst.db"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"kbx: error: no MLflow store at {tmp_path / 'nowhere'} (expected a mlruns/ directory with mlflow.db, or a URI)"]


def test_lost_artifacts_stop_the_import_unless_allowed(tmp_path, capsys):
    _, ids = node_store(tmp_path / "node")
    shutil.rmtree(tmp_path / "node" / "mlruns" / "artifacts" / "kbx")
    dst_uri = f"sqlite:///{tmp_path / 'home' / 'mlflow.db'}"
    (tmp_path / "home").mkdir()
    assert sync_main([str(tmp_path / "node" / "mlruns"), dst_uri, "--experiment", "kbx"]) == 2
    assert "kbx: error: the artifacts of run" in capsys.readouterr().err
    dst = MlflowClient(tracking_uri=dst_uri)
    assert copies(dst) == {}, "nothing is marked imported"
    assert sync_main([str(tmp_path / "node" / "mlruns"), dst_uri, "--experiment", "kbx",
                      "--allow-missing-artifacts"]) == 0  # fmt: skip
    assert "kbx: 3 runs imported, 0 already there, 0 not ended yet (left for later), 1 unfinished" in capsys.readouterr().out
    assert set(copies(dst)) == {ids["job"], ids["Activation/gelu"], ids["Math/add"]}



def test_task_runs_in_the_companion_experiment_come_home_under_their_job(tmp_path):
    """kbx logs jobs in `kbx` and task runs in `kbx-tasks`: `--experiment kbx` brings both, each task
    copy names its job's copy, and the job's description links to DST's task view of that copy."""
    from kbx.core.hardware import load_profiles
    from kbx.core.record import EvalRecord, Status
    from kbx.methods.loop import Judged, TaskResult
    from kbx.tasks import discover
    from kbx.tracking.sync import sync
    from kbx.tracking.tracker import Tracker

    src_uri, dst_uri = f"sqlite:///{tmp_path}/src/mlflow.db", f"sqlite:///{tmp_path}/dst/mlflow.db"
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    tracker = Tracker(src_uri, "kbx", tmp_path / "src")
    task = discover()["Math/add"]
    job = tracker.start_parent("m | all | cpu | 1 round", {"n_tasks": 1}, {})
    ok = EvalRecord(task=task.id, task_version=1, status=Status.OK, label="round0/a")
    child = tracker.log_task(job, TaskResult(task, [Judged(0, ok, "x = 1")]), "m", load_profiles()["cpu"])
    tracker.finish_parent(job, {"correct_rate": 1.0}, {"summary.txt": "1 task\n"})
    sync(src_uri, dst_uri, ["kbx"])
    dst = MlflowClient(dst_uri)
    copied = copies(dst)
    tasks = dst.get_experiment_by_name("kbx-tasks")
    assert copied[child].info.experiment_id == tasks.experiment_id
    assert copied[child].data.tags["mlflow.parentRunId"] == copied[job].info.run_id
    note = dst.get_run(copied[job].info.run_id).data.tags["mlflow.note.content"]
    assert f"/experiments/{tasks.experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={copied[job].info.run_id})" in note
    assert f"mlflow.sharedViewState.{copied[job].info.run_id}" in dst.get_experiment(tasks.experiment_id).tags


def test_an_llm_tasks_trace_comes_home_with_its_run_once(tmp_path):
    """The trace moves with its task run, under a new id linked to the copy; a copy cut short before its source tag
    (its trace already written) is deleted with that trace and redone; a second import adds nothing."""
    from kbx.tracking.sync import sync
    from kbx.tracking.tracker import Tracker

    src_uri, dst_uri = f"sqlite:///{tmp_path}/src/mlflow.db", f"sqlite:///{tmp_path}/dst/mlflow.db"
    for side in ("src", "dst"):
        (tmp_path / side).mkdir()
    tracker = Tracker(src_uri, "kbx", tmp_path / "src")
    job = tracker.start_parent("geak | all | cpu | 2 rounds", {"n_tasks": 1}, {})
    child = tracker.log_task(job, trajectory(), "geak", CPU)
    tracker.finish_parent(job, {"correct_rate": 1.0}, {})
    src = MlflowClient(src_uri)
    (original,) = src.search_traces(locations=[tracker.tasks_experiment_id], run_id=child)
    home = Tracker(dst_uri, "kbx", tmp_path / "dst")  # DST, with a copy of the task run cut short
    cut = home.client.create_run(home.tasks_experiment_id, run_name="Math/add", tags={PENDING_TAG: child}).info.run_id
    traces.write(TracingClient(dst_uri), *traces.copy_trace(original, home.tasks_experiment_id, cut))

    sync(src_uri, dst_uri, ["kbx"])
    dst = MlflowClient(dst_uri)
    copy = copies(dst)[child].info.run_id
    (trace,) = dst.search_traces(locations=[home.tasks_experiment_id])  # the cut-short copy's is gone
    assert trace.info.trace_metadata["mlflow.sourceRun"] == copy and trace.info.trace_id != original.info.trace_id
    assert trace.info.tags[traces.SOURCE_TRACE_TAG] == original.info.trace_id
    shape = sorted((s.name, s.span_type, s.start_time_ns, repr(s.inputs), repr(s.outputs)) for s in original.data.spans)
    assert sorted((s.name, s.span_type, s.start_time_ns, repr(s.inputs), repr(s.outputs)) for s in trace.data.spans) == shape
    names = {s.span_id: s.name for s in trace.data.spans}
    verdicts = sorted((names.get(a.span_id, ""), a.name, repr(a.value)) for a in trace.info.assessments)
    old_names = {s.span_id: s.name for s in original.data.spans}
    assert verdicts == sorted((old_names.get(a.span_id, ""), a.name, repr(a.value)) for a in original.info.assessments)
    assert trace.info.token_usage == original.info.token_usage

    sync(src_uri, dst_uri, ["kbx"])
    assert len(dst.search_traces(locations=[home.tasks_experiment_id])) == 1
