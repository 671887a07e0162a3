"""EvaluatorPool: one Evaluator per GPU, attempts spread over them. Exercised here with two CPU
members (each a real zygote and judge) and two fake GPUs' schedulers; the two-GPU throughput runs
are in docs/BENCHMARKS.md. Also evaluate_all's interrupt: queued attempts never start."""

from __future__ import annotations

import threading

from kbx.contract.attempt import Attempt
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.driver.pool import EvaluatorPool, open_evaluator
from kbx.driver.scheduler import GpuScheduler
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
    thread pools (kbx.driver.evaluator.cpu_threads_per_process), so a pool never oversubscribes."""
    from kbx.driver import evaluator

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


def test_each_gpu_has_its_own_schedule_and_no_window_waits_for_another_gpus():
    """Nothing host-wide serialises timings: every member owns its scheduler (windows, memory
    admission), timer and timer lock, and one GPU's exclusive window neither waits for nor freezes
    another's (two fake GPUs' schedulers, windows held at once from two threads)."""
    with EvaluatorPool(SETTINGS, [0, 1]) as pool:
        a, b = pool.members
        assert [m.settings.gpu_index for m in pool.members] == [0, 1]
        assert a.gpu is not b.gpu and a.timer is not b.timer and a.timer_lock is not b.timer_lock
        assert a.judges is not b.judges and a.zygote is not b.zygote

    frozen: list[tuple[int, str]] = []
    gpus = [GpuScheduler(lambda owner, i=i: (frozen.append((i, owner)), lambda: None)[1]) for i in range(2)]
    both_inside = threading.Barrier(2, timeout=10)  # broken (an error) unless both windows are open at once

    def time_on(i: int) -> None:
        with gpus[i].exclusive(f"job{i}"):
            both_inside.wait()

    threads = [threading.Thread(target=time_on, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not both_inside.broken and sorted(frozen) == [(0, "job0"), (1, "job1")]  # each froze only its own
    assert [g.windows for g in gpus] == [1, 1]


def test_an_interrupt_starts_no_queued_attempt():
    """Ctrl-C while judging: the attempts still queued never start (a plain executor would run them
    all before the interrupt got through; the H200 bench took 65 s to stop)."""
    import time
    from types import SimpleNamespace

    from kbx.driver.evaluator import evaluate_all

    started: list[int] = []

    def evaluate_one(i: int):
        started.append(i)
        time.sleep(0.2)
        return SimpleNamespace(task=str(i), wall_s=0.2)

    def interrupt(i, record):
        raise KeyboardInterrupt

    workers = 2
    try:
        evaluate_all(evaluate_one, list(range(20)), workers, interrupt)
    except KeyboardInterrupt:
        pass
    time.sleep(0.5)  # those in flight finish; nothing queued may follow them
    # the first `workers`, and at most one more per worker that freed up before the interrupt
    assert len(started) <= 2 * workers, started
