"""Evaluator.dump_stacks: a stalled run names where every process is (judges, timer, workers)."""

from __future__ import annotations

import math
import signal
import threading
import time

from kbx.contract.attempt import Attempt
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.tasks import discover
from tests.conftest import FIXTURE_TASKS, REPO

HANG = (REPO / "tests" / "zoo" / "infinite_loop.py").read_text()
SETTLE_S = 60.0
CHECK_TIMEOUT_S = 20.0  # the hung attempt's life: room for imports on a loaded CI machine, then dumps


def test_stacks_of_a_hung_worker_and_the_judges():
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    settings = EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1, check_timeout_s=CHECK_TIMEOUT_S)
    with Evaluator(settings) as ev:
        ev.judges.clients[0].request({"op": "ping"}, timeout_s=SETTLE_S)  # a judge is up before the dump
        records = []
        runner = threading.Thread(target=lambda: records.extend(ev.evaluate([Attempt(task, HANG, "hang")])))
        runner.start()
        # "checking" starts before the worker has imported the candidate (seconds on a loaded
        # machine), so dump until the stack shows the candidate's loop or the attempt is over.
        dump = ""
        while runner.is_alive() and "in scale_add" not in dump:
            time.sleep(0.2)
            if any(phase == "checking" for _, phase, _ in ev.in_flight()):
                dump = ev.dump_stacks()
        runner.join()
    assert "--- Math/zoo_scale_add (checking) ---" in dump
    assert "in scale_add" in dump  # the candidate's busy loop, from the worker's own stack
    assert "--- judge0.log ---" in dump and "judge.py" in dump  # the judge waiting for its next request
    assert records[0].status.value == "timeout"


def test_stack_dumps_throughout_an_attempt_leave_its_verdict_alone():
    """A dump can reach a worker before it installs its handler (just forked): it must not kill it."""
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    code = (REPO / "tests" / "zoo" / "ok_triton.py").read_text()
    with Evaluator(EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1)) as ev:
        records = []
        runner = threading.Thread(target=lambda: records.extend(ev.evaluate([Attempt(task, code, "ok")])))
        runner.start()
        dumps = 0
        while runner.is_alive():
            for job_id in list(ev.active):
                ev.zygote.signal_child(job_id, signal.SIGUSR1)
                dumps += 1
            time.sleep(0.01)
        runner.join()
    assert dumps > 0
    assert records[0].status.value == "ok", records[0].reason


def test_stage_split_covers_the_attempt():
    """The record's stages are parts of its wall time, in order, and the ones before the check are measured:
    kbx.bench reports what is left over as the driver's own."""
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    code = (REPO / "tests" / "zoo" / "ok_triton.py").read_text()
    with Evaluator(EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1)) as ev:
        (record,) = ev.evaluate([Attempt(task, code, "ok")])
    assert record.status.value == "ok", record.reason
    parts = (record.start_s, record.inputs_s, record.compile_s, record.check_s, record.judge_s)
    assert all(p > 0 for p in parts), parts
    assert record.redone_s == 0.0 and math.fsum(parts) <= record.wall_s
