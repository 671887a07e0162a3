"""EvaluatorPool: one Evaluator per GPU, attempts spread over them. Exercised here with two CPU
members (each a real zygote and judge); the two-GPU throughput run is in docs/BENCHMARKS.md."""

from __future__ import annotations

from kbx.eval.evaluator import Attempt, EvalSettings, Evaluator
from kbx.eval.pool import EvaluatorPool, open_evaluator
from kbx.tasks import discover
from tests.conftest import FIXTURE_TASKS, REPO

ZOO = REPO / "tests" / "zoo"
SETTINGS = EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1)


class Counting(Evaluator):
    def __init__(self, settings: EvalSettings) -> None:
        super().__init__(settings)
        self.labels: list[str] = []

    def evaluate_one(self, attempt: Attempt):
        self.labels.append(attempt.label)
        return super().evaluate_one(attempt)


def test_attempts_spread_over_members_and_come_back_in_order():
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    plan = ["ok_triton", "no_triton_torch", "segfault", "ok_kernel_function"]
    attempts = [Attempt(task, (ZOO / f"{name}.py").read_text(), name) for name in plan]
    with EvaluatorPool(SETTINGS, [0, 1], make=Counting) as pool:
        assert len({(m.secret_seed, m.ghost_seed) for m in pool.members}) == 1  # one run, one set of seeds
        records = pool.evaluate(attempts)
        labels = [m.labels for m in pool.members]
        assert pool.loads == [0, 0] and pool.in_flight() == []
    assert [r.label for r in records] == plan
    assert [r.status.value for r in records] == ["ok", "no_triton", "crashed", "ok"]
    assert all(labels) and sorted(sum(labels, [])) == sorted(plan)  # both members judged some


def test_one_device_gets_a_plain_evaluator():
    with open_evaluator(SETTINGS, [0, 1]) as ev:  # on the CPU there is one device, whatever the list
        assert isinstance(ev, Evaluator)


def test_the_hosts_cpus_are_shared_among_every_members_processes(monkeypatch):
    """Each member's workers, judges and timer get an even share of the host's CPUs as their
    thread pools (kbx.eval.evaluator.cpu_threads_per_process), so a pool never oversubscribes."""
    from kbx.eval import evaluator

    monkeypatch.setattr(evaluator.os, "sched_getaffinity", lambda pid: set(range(16)))
    assert evaluator.cpu_threads_per_process(4) == 4
    assert evaluator.cpu_threads_per_process(13) == 1 and evaluator.cpu_threads_per_process(40) == 1
    assert evaluator.cpu_threads_per_process(4, evaluators=2) == 2
    for name in evaluator.CPU_THREAD_VARS:
        monkeypatch.delenv(name, raising=False)
    with EvaluatorPool(SETTINGS, [0, 1]) as pool:
        # 1 worker + 1 judge + 1 timer per member, two members: 16 CPUs // 6
        assert all(m.settings.host_share == 2 for m in pool.members)
        assert {m.zygote.env_extra["OMP_NUM_THREADS"] for m in pool.members} == {"2"}
        assert pool.members[0].judges.clients[0].env_extra["MKL_NUM_THREADS"] == "2"


def test_start_launches_the_processes_before_the_first_attempt():
    """kbx.run starts every member's zygote and judges at once (Evaluator.start), so their imports
    overlap its MLflow start; on the CPU the timer, which only times on a GPU, stays unstarted."""
    with EvaluatorPool(SETTINGS, [0, 1]) as pool:
        assert all(m.zygote.proc is None for m in pool.members)  # lazily started otherwise
        pool.start()
        for member in pool.members:
            assert member.zygote.proc.poll() is None
            assert all(judge.proc.poll() is None for judge in member.judges.clients)
            assert member.timer.proc is None
        ping = pool.members[0].judges.clients[0].request({"op": "ping"}, timeout_s=120)
        assert "error" not in ping
    assert all(m.zygote.proc.poll() is not None for m in pool.members)  # closed with the pool
