"""Evaluator.dump_stacks: a stalled run names where every process is (judges, timer, workers)."""

from __future__ import annotations

import threading
import time

from kbx.eval.evaluator import Attempt, EvalSettings, Evaluator
from kbx.tasks import discover
from tests.conftest import FIXTURE_TASKS, REPO

HANG = (REPO / "tests" / "zoo" / "infinite_loop.py").read_text()
SETTLE_S = 60.0


def test_stacks_of_a_hung_worker_and_the_judges():
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    with Evaluator(EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1, check_timeout_s=12)) as ev:
        ev.judges.clients[0].request({"op": "ping"}, timeout_s=SETTLE_S)  # a judge is up before the dump
        records = []
        runner = threading.Thread(target=lambda: records.extend(ev.evaluate([Attempt(task, HANG, "hang")])))
        runner.start()
        deadline = time.monotonic() + SETTLE_S
        while not any(phase == "checking" and secs > 3 for _, phase, secs in ev.in_flight()):
            assert time.monotonic() < deadline, "the attempt never reached its cases"
            time.sleep(0.2)
        dump = ev.dump_stacks()
        runner.join()
    assert "--- Math/zoo_scale_add (checking) ---" in dump
    assert "in scale_add" in dump  # the candidate's busy loop, from the worker's own stack
    assert "--- judge0.log ---" in dump and "judge.py" in dump  # the judge waiting for its next request
    assert records[0].status.value == "timeout"
