"""Failures of kbx's own machinery are never the candidate's: each is injected from outside while
an honest attempt is in flight, and the attempt must come back `ok`, redone (harness_retries), or
as `harness_error`, which the rates leave out. CPU, the fixture tasks, the sandbox on."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import threading
import time
import types
from pathlib import Path

import pytest

from kbx.contract.attempt import Attempt
from kbx.core.record import Status
from kbx.driver.attempt import MAX_HARNESS_RETRIES
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.job.summary import summarize
from kbx.methods.loop import Judged, TaskResult
from kbx.tasks import discover

TESTS = Path(__file__).parents[1]  # tests/, above this file's folder
FIXTURE_TASKS = TESTS / "fixtures" / "tasks"
HONEST = (TESTS / "zoo" / "ok_triton.py").read_text()
TASK = "Math/zoo_scale_add"
IMPORT_DELAY_S = 3.0  # the honest candidate sleeps this long at import: the window for the fault
SLOW_HONEST = f"import time\ntime.sleep({IMPORT_DELAY_S})\n" + HONEST
PHASE_WAIT_S = 120.0
JUDGE_DEADLINE_S = 10.0
CHECK_TIMEOUT_S = 600.0  # a redone try restarts the worker pool (torch imported afresh): minutes on a loaded CI machine  # far above a warm judge's answer on the fixture task


def _settings(tasks_dir: Path, **kw) -> EvalSettings:
    return EvalSettings(tasks_dir=str(tasks_dir), workers=1, secret_seed=False, check_timeout_s=CHECK_TIMEOUT_S, **kw)


def _wait_for_phase(ev: Evaluator, phase: str) -> None:
    deadline = time.monotonic() + PHASE_WAIT_S
    while time.monotonic() < deadline:
        if any(p == phase for _, p, _ in ev.in_flight()):
            return
        time.sleep(0.05)
    raise AssertionError(f"no attempt reached {phase!r}: {ev.in_flight()}")


def _in_background(fn):
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    return thread, out


@pytest.mark.serial  # kills worker pools: beside another file's attempts its redo ran past the check timeout
def test_worker_pool_killed_mid_attempt_is_redone():
    tasks = discover(str(FIXTURE_TASKS))
    with Evaluator(_settings(FIXTURE_TASKS)) as ev:
        thread, out = _in_background(lambda: ev.evaluate_one(Attempt(tasks[TASK], SLOW_HONEST, "innocent")))
        _wait_for_phase(ev, "checking")
        time.sleep(0.5)
        ev.zygote.proc.kill()  # the pre-forked pool dies under the innocent attempt
        thread.join()
    (record,) = out
    assert record.status is Status.OK, (record.status, record.reason)
    assert record.harness_retries == 1
    assert record.harness_failures == ("the worker pool died (it restarts for the next try)",)
    assert 0.5 < record.redone_s < record.wall_s  # the killed try ran past the check's start


def test_a_judge_that_stops_answering_is_replaced():
    tasks = discover(str(FIXTURE_TASKS))
    with Evaluator(_settings(FIXTURE_TASKS)) as ev:
        assert ev.evaluate_one(Attempt(tasks[TASK], HONEST, "warm-up")).status is Status.OK  # the judge runs
        (startup,) = ev.judge_startups()  # as the judge reported it at its first request (the CPU: imports only)
        assert list(startup) == ["import_s"] and startup["import_s"] > 0
        ev.settings = dataclasses.replace(ev.settings, judge_timeout_s=JUDGE_DEADLINE_S)  # once it is warm
        (judge,) = ev.judges.clients
        os.kill(judge.proc.pid, signal.SIGSTOP)  # hung: no answer until its deadline, then killed
        record = ev.evaluate_one(Attempt(tasks[TASK], HONEST, "innocent"))
    assert record.status is Status.OK, (record.status, record.reason)
    assert record.harness_retries == 1


def test_a_task_file_changed_during_the_run_is_refused_not_charged(tmp_path):
    tasks_dir = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS, tasks_dir)
    task = discover(str(tasks_dir))[TASK]
    task_file = Path(task.path)
    task_file.write_text(task_file.read_text().replace("return input * 2 + other", "return input * 0"))
    with Evaluator(_settings(tasks_dir)) as ev:
        record = ev.evaluate_one(Attempt(task, HONEST, "innocent"))
    assert record.status is Status.HARNESS_ERROR and record.harness_retries == MAX_HARNESS_RETRIES
    assert "changed during the run" in record.reason
    assert len(record.harness_failures) == MAX_HARNESS_RETRIES  # the last failure is the reason
    assert all("changed during the run" in why for why in record.harness_failures)
    assert not record.compiled and not record.correct
    ok = dataclasses.replace(record, status=Status.OK)
    summary = summarize([TaskResult(task, [Judged(0, record, "")]), TaskResult(task, [Judged(0, ok, "")])])
    assert summary["n_tasks"] == 2 and summary["n_harness_error"] == 1
    assert summary["correct_rate"] == 1.0  # over the one task with a verdict


def test_a_failure_making_the_inputs_is_the_harnesss_not_the_candidates(tmp_path):
    """The worker makes the task's inputs after it is set up and before it imports the candidate:
    a failure there (on an H100 with 16 workers, the GPU out of memory) is redone, then recorded
    `harness_error`, never `crashed`."""
    tasks_dir = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS, tasks_dir)
    task_file = tasks_dir / TASK / "task.py"
    task_file.write_text(task_file.read_text().replace(
        "def make_inputs(params, gen, device) -> Call:\n",
        "def make_inputs(params, gen, device) -> Call:\n    raise RuntimeError('CUDA error: out of memory')\n"))  # fmt: skip
    task = discover(str(tasks_dir))[TASK]
    with Evaluator(_settings(tasks_dir)) as ev:
        record = ev.evaluate_one(Attempt(task, HONEST, "innocent"))
    assert record.status is Status.HARNESS_ERROR and record.harness_retries == MAX_HARNESS_RETRIES, record.reason
    assert "before any candidate code ran: making the task's inputs: RuntimeError: CUDA error: out of memory" in (
        record.reason)  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser") or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root, runuser and a system python3 to run the probe as another user")  # fmt: skip
def test_the_sandbox_works_for_an_unprivileged_user():
    """The non-root path: the zygote's own user and PID namespaces (kbx.sandbox.namespaces)."""
    import subprocess

    repo = str(TESTS.parent)
    done = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-m", "kbx.sandbox.namespaces"],
                          capture_output=True, text=True, cwd="/", env={"PYTHONPATH": repo, "PATH": os.environ["PATH"]},
                          timeout=60)  # fmt: skip
    assert done.returncode == 0 and '"available": true' in done.stdout, done.stdout + done.stderr


def test_a_gpu_busy_after_the_candidates_timing_is_charged_only_when_every_try_shows_it():
    """A frozen process's queued kernels keep running, so one busy GPU after the owner's repetitions
    does not prove the work was the owner's: the attempt is redone, and charged as hidden work only
    when each of its tries finds the GPU busy (the thread variant of tests/sandbox/test_quiet_gpu.py)."""
    from kbx.driver.attempt import AttemptRun, _HarnessFailure

    run = AttemptRun.__new__(AttemptRun)  # the rule alone: no worker, judge or GPU
    run.busy_tries = 0
    for _ in range(MAX_HARNESS_RETRIES):
        with pytest.raises(_HarnessFailure, match="stayed busy after shape n2048"):
            run._owner_busy("n2048")
    reason = run._owner_busy("n2048")
    assert reason.startswith("the GPU stayed busy with other work of the candidate's own process while shape n2048")
    assert f"on each of {MAX_HARNESS_RETRIES + 1} tries" in reason


def test_every_repetition_disturbed_is_charged_only_when_every_try_shows_it():
    """On an H200 (2026-11-29) an honest expert had every repetition of one shape disturbed in a cold
    full-suite run (host CPUs 52 % busy) and was charged hidden_work on that one try; the next run of
    the same code timed it clean. Now the attempt is redone first, and a try that does not show it
    stands: the charge needs every try."""
    from kbx.driver.attempt import AttemptRun, _HarnessFailure

    suspicion = "shape n1024_k50: every repetition ran work outside the timed stream"
    run = AttemptRun.__new__(AttemptRun)  # the rule alone: no worker, judge or GPU
    run.busy_tries = 0
    with pytest.raises(_HarnessFailure, match="every repetition ran work outside"):
        run._charged_on_every_try(suspicion)
    assert run.busy_tries == 1  # a clean next try returns its own record: nothing is charged
    for _ in range(MAX_HARNESS_RETRIES - 1):
        with pytest.raises(_HarnessFailure):
            run._charged_on_every_try(suspicion)
    assert run._charged_on_every_try(suspicion) == f"{suspicion}, on each of {MAX_HARNESS_RETRIES + 1} tries"


def test_a_crash_after_kbx_signalled_the_worker_is_redone_not_charged():
    """faulthandler's all-thread stack dump (kbx's SIGUSR1) is not async-signal-safe: a worker that crashes
    after kbx signalled it may be kbx's doing, so the attempt is redone; without a signal the crash is the
    candidate's."""
    from kbx.driver.attempt import AttemptRun, _HarnessFailure
    from kbx.driver.processes import ZygoteClient

    zygote = ZygoteClient({}, TESTS / "unused.log")  # its bookkeeping only: no process is started
    zygote._send = lambda msg: None
    run = AttemptRun.__new__(AttemptRun)  # the rule alone: no worker, judge or GPU
    run.ev, run.job_id = types.SimpleNamespace(zygote=zygote), "job1"
    run._record = lambda status, checked, reason: (status, reason)
    crash = {"event": "exited", "signal": signal.SIGSEGV}
    assert run._failed_worker(crash, 60.0) == (Status.CRASHED, "the worker crashed with SIGSEGV while checking")
    zygote.signal_child("job1", signal.SIGUSR1)
    with pytest.raises(_HarnessFailure, match="after kbx signalled it for a stack dump"):
        run._failed_worker(crash, 60.0)
    zygote.forget("job1")  # the next try is a new job: its own crash is its own again
    assert run._failed_worker(crash, 60.0)[0] is Status.CRASHED


def test_a_judge_answers_every_request_before_it_leaves_at_the_end_of_its_input():
    """The judge ends with os._exit (kbx.sandbox.process_exit): whatever it was asked before its input
    closed is answered, and it exits 0."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "KBX_DEVICE": "cpu", "KBX_TASKS_DIR": str(FIXTURE_TASKS)}
    requests = b'{"op": "ping"}\n{"op": "no such op"}\n{"op": "ping"}\n'
    done = subprocess.run([sys.executable, "-m", "kbx.sandbox.judge"], input=requests, capture_output=True, env=env,
                          timeout=120)  # fmt: skip
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == 0 and len(replies) == 3, done.stderr.decode()[-2000:]
    assert replies[0]["ok"] and replies[2]["ok"] and "error" in replies[1]
    assert list(replies[0]["startup_s"]) == ["import_s"]  # no CUDA to warm up on the CPU
    assert 0 < replies[0]["startup_s"]["import_s"] < 120


@pytest.mark.gpu
def test_a_gpu_judge_warms_up_before_its_first_request():
    """kbx.sandbox.judge.warm_up: the CUDA context and the libraries' handles are made at start-up,
    timed by phase, and reported in the answer to the first ping."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "KBX_DEVICE": "cuda:0", "KBX_TASKS_DIR": str(FIXTURE_TASKS)}
    done = subprocess.run([sys.executable, "-m", "kbx.sandbox.judge"], input=b'{"op": "ping"}\n', capture_output=True,
                          env=env, timeout=300)  # fmt: skip
    (reply,) = [json.loads(line) for line in done.stdout.decode().splitlines()]
    phases = ["import_s", "cuda_context_s", "generator_s", "matmul_s", "compare_s"]
    assert list(reply["startup_s"]) == phases, done.stderr.decode()[-2000:]
    assert all(0 < seconds < 300 for seconds in reply["startup_s"].values())
