"""RayEvaluatorPool on a real local Ray instance (CPU actors, each a real Evaluator with its zygote and
judge): dispatch, one set of seeds, failover when an actor dies mid-attempt, and the CLI with
eval.backend=ray. One Ray instance serves the module; the CLI test starts its own."""

from __future__ import annotations

import math
import os
import pickle
import shutil
import signal
import threading
import time

import pytest

from kbx.contract.attempt import Attempt
from kbx.core.record import EvalRecord, Mismatch, ShapeTiming, Status
from kbx.driver.evaluator import EvalSettings
from kbx.tasks import discover
from tests.conftest import FIXTURE_TASKS, REPO

ZOO = REPO / "tests" / "zoo"
SETTINGS = EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1)
SLOW_S = 8  # the slow candidate's import: long enough to kill its actor while it is being checked
RAY_CPUS = 3  # logical CPUs of the test instance: one actor each


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="Ray is in the [cluster] extra (make test installs it)")
    ray.init(address="local", num_cpus=RAY_CPUS, include_dashboard=False, object_store_memory=100 * 2**20)
    yield ray
    ray.shutdown()


def attempts(*labels: str) -> list[Attempt]:
    """"slow": a correct kernel that sleeps SLOW_S at import; "ok", "ok1", ...: the correct kernel;
    anything else: that zoo file."""
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    ok = (ZOO / "ok_triton.py").read_text()

    def code(label: str) -> str:
        if label == "slow":
            return f"import time\ntime.sleep({SLOW_S})\n{ok}"
        return ok if label.rstrip("0123456789") == "ok" else (ZOO / f"{label}.py").read_text()

    return [Attempt(task, code(label), label) for label in labels]


def pool(n: int):
    from kbx.driver.ray_pool import RayEvaluatorPool, RaySettings

    return RayEvaluatorPool(SETTINGS, RaySettings(actors=n))


def describe(ray, member) -> dict:
    return ray.get(member.handle.describe.remote(), timeout=60)


def wait_until_checking(ray, p, label: str, timeout: float = 240.0):
    """The member judging `label` (its only attempt), once its worker has been checking it for a second."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in p.members:
            if m.holding == [label]:
                phases = ray.get(m.handle.in_flight.remote(), timeout=60)
                if any(phase == "checking" and secs > 1 for _, phase, secs in phases):
                    return m
        time.sleep(0.3)
    pytest.fail(f"{label} was never being checked")


def descendants(pid: int) -> list:
    import psutil

    return psutil.Process(pid).children(recursive=True)


def gone(procs: list, timeout: float = 30.0) -> bool:
    import psutil

    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return not alive


def judge_in_background(p, batch: list[Attempt]) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run():
        try:
            out["records"] = p.evaluate(batch)
        except BaseException as exc:  # handed to the test thread
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_records_pickle_whole():
    """Actors send EvalRecords back through pickle: every field, nested and NaN ones included, survives."""
    record = EvalRecord(task="Math/add", task_version=2, status=Status.MISMATCH, label="round1/a", timed=True,
                        speedup=1.5, mismatch=Mismatch(case="c", indices=((0, 1),), got=(1.0,), expected=(2.0,)),
                        shapes=(ShapeTiming("s", 1.0, 0.1, 2.0, 0.1, 10, 2.0, 0.1, 3.0),))  # fmt: skip
    back = pickle.loads(pickle.dumps(record))
    assert repr(back) == repr(record) and back.status is Status.MISMATCH and math.isnan(back.runtime_ms)


def test_actors_judge_with_one_set_of_seeds(ray_local):
    plan = ["ok", "no_triton_torch", "segfault", "ok_kernel_function"]
    with pool(2) as p:
        infos = [describe(ray_local, m) for m in p.members]
        records = p.evaluate(attempts(*plan))
        judged = [describe(ray_local, m)["judged"] for m in p.members]
        assert p.in_flight() == [] and "=== ray actor 1" in p.dump_stacks()
    assert [r.label for r in records] == plan
    assert [r.status.value for r in records] == ["ok", "no_triton", "crashed", "ok"]  # the segfault killed a worker only
    assert all(judged) and sum(judged) == len(plan)  # both actors judged, each attempt once
    assert {(i["secret_seed"], i["ghost_seed"]) for i in infos} == {(p.secret_seed, p.ghost_seed)}
    assert {i["host_share"] for i in infos} == {RAY_CPUS}  # the node's CPUs are shared by as many actors as fit
    assert p.costs.device == "cpu" and set(p.costs.seconds) >= {"Math/zoo_scale_add"}  # longest first next time
    assert p.secret_seed is not None and os.getpid() not in {i["pid"] for i in infos}
    assert all(not os.path.exists(i["workdir"]) for i in infos)  # close() closed each actor's Evaluator


@pytest.mark.parametrize("how", ["ray.kill", "SIGKILL"])
def test_an_actor_lost_mid_attempt_fails_over(ray_local, how):
    """The actor judging `slow` dies while its worker checks it: `slow` is judged again on the other
    actor, every attempt gets exactly one record, and nothing the dead actor started keeps running."""
    batch = attempts("slow", "ok1", "ok2", "ok3")
    with pool(2) as p:
        thread, out = judge_in_background(p, batch)
        victim = wait_until_checking(ray_local, p, "slow")
        orphans = descendants(victim.info["pid"])  # its zygote and the slow candidate's worker, at least
        assert any("kbx.sandbox.zygote" in " ".join(proc.cmdline()) for proc in orphans), orphans
        if how == "SIGKILL":
            os.kill(victim.info["pid"], signal.SIGKILL)
        else:
            ray_local.kill(victim.handle)
        thread.join(timeout=300)
        assert not thread.is_alive() and "error" not in out, out.get("error")
        survivor = next(m for m in p.members if m is not victim)
        judged = describe(ray_local, survivor)["judged"]
        assert p.failovers == [("slow", victim.index)] and not victim.alive and survivor.alive
    records = out["records"]
    assert [r.label for r in records] == ["slow", "ok1", "ok2", "ok3"]
    assert all(r.status is Status.OK for r in records), [(r.label, r.status, r.reason) for r in records]
    assert judged == len(batch)  # the survivor judged all four, `slow` included; the victim finished none
    assert gone(orphans), "a dead actor's processes outlived it"
    shutil.rmtree(victim.info["workdir"], ignore_errors=True)  # a killed actor cannot clean up after itself


def test_no_actor_left_is_a_clear_error(ray_local):
    from kbx.driver.ray_pool import RayPoolError

    with pool(1) as p:
        ray_local.kill(p.members[0].handle)
        with pytest.raises(RayPoolError, match="every Ray actor of the evaluation pool has died"):
            p.evaluate(attempts("ok"))
        assert p.failovers == [("ok", 0)]
        shutil.rmtree(p.members[0].info["workdir"], ignore_errors=True)


def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=["task=Math/add", "method=reference", *overrides])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["eval.backend=slurm", "hardware=cpu"], "eval.backend: expected one of local, ray"),
        (["eval.backend=ray", "hardware=auto"], "eval.backend=ray needs a named hardware profile"),
        (["eval.backend=ray", "hardware=cpu", "hardware.gpus=[0,1]"], "set eval.ray_actors instead"),
        (["eval.backend=ray", "hardware=cpu", "eval.ray_actors=-1"], "eval.ray_actors: expected an integer >= 0"),
    ],
)
def test_bad_backend_settings_fail_in_prepare(tmp_path, overrides, message):
    from kbx.core.errors import ConfigError
    from kbx.job.runner import Job

    with pytest.raises(ConfigError, match=message):
        Job.prepare(compose(*overrides), tmp_path)


def test_backend_is_not_part_of_a_jobs_identity(tmp_path):
    """A job cut short on one backend (or Slurm partition) is resumed on another: same config_hash."""
    from kbx.job.runner import Job

    local = Job.prepare(compose("hardware=cpu"), tmp_path)
    ray = Job.prepare(compose("hardware=cpu", "eval.backend=ray", "eval.ray_actors=3", "hardware.slurm.partition=p"),
                      tmp_path)  # fmt: skip
    other = Job.prepare(compose("hardware=cpu", "eval.workers=3"), tmp_path)
    assert local.config_hash() == ray.config_hash() != other.config_hash()
    assert ray.ray_settings().actors == 3 and local.ray_settings() is None


@pytest.mark.e2e
def test_cli_fails_at_once_where_no_cluster_listens(kbx_cli, tmp_path):
    pytest.importorskip("ray", reason="Ray is in the [cluster] extra (make test installs it)")
    started = time.monotonic()
    code, out, err = kbx_cli("kbx.run", "method=reference", "hardware=cpu", "task=Activation/relu", "eval.backend=ray",
                             "eval.ray_address=127.0.0.1:1", f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
                             f"hydra.run.dir={tmp_path}/out", timeout=120)  # fmt: skip
    assert code == 2 and "kbx: error: no Ray cluster at eval.ray_address=127.0.0.1:1" in err, err[-2000:]
    assert time.monotonic() - started < 60 and not (tmp_path / "mlflow.db").exists()


@pytest.mark.e2e
def test_cli_with_the_ray_backend(kbx_cli, tmp_path):
    pytest.importorskip("ray", reason="Ray is in the [cluster] extra (make test installs it)")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code, out, err = kbx_cli("kbx.run", "method=reference", "hardware=cpu", "task=[Activation/relu,Activation/selu]",
                             "eval.backend=ray", "eval.ray_address=local", "eval.ray_actors=2", "eval.workers=1",
                             "experiment=ray", f"tracking_uri={uri}", f"hydra.run.dir={tmp_path}/out")  # fmt: skip
    assert code == 0, err[-3000:]
    assert "Ray evaluation pool: ray actor 0" in out + err and "ray actor 1" in out + err
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["ray", "ray-tasks"])
    job = runs[runs["tags.kbx.role"] == "job"].iloc[0]
    tasks = runs[runs["tags.kbx.role"] == "task"]
    assert job["tags.kbx.eval_backend"] == "ray" and job["metrics.suite/correct_rate"] == 1.0
    assert sorted(tasks["params.task"]) == ["Activation/relu", "Activation/selu"] and (tasks["metrics.correct"] == 1).all()
