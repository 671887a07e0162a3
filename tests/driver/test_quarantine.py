"""A kernel that takes its driver down cannot block a job forever: the real CLI, run three times
on a kernel that SIGKILLs its driver (possible only with eval.sandbox=none), quarantines that task
on the third start and finishes the job; the honest task beside it keeps its verdict."""

from __future__ import annotations

import json

import pytest

from kbx.driver.inflight import QUARANTINE_AFTER, InFlightJournal
from tests.conftest import FIXTURE_TASKS, REPO

pytestmark = pytest.mark.e2e

KILL_DRIVER = '''
import os, signal

def _parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])

os.kill(_parent(os.getppid()), signal.SIGKILL)  # the worker pool's parent: the driver

def scale_add(input, other):
    return input * 2 + other
'''


def test_journal_counts_sessions_that_died_with_the_task(tmp_path):
    for session in ("a", "b"):
        journal = InFlightJournal(tmp_path, "run", session)
        journal.started("T/poison")
        journal.started("T/poison")  # once per session
        journal.started("T/honest")
        journal.finished("T/honest")
    with open(journal.path, "a") as f:
        f.write('{"event": "started", "task": "T/cut')  # the line a death cut short
    assert InFlightJournal(tmp_path, "run", "c").deaths() == {"T/poison": 2}
    judged = InFlightJournal(tmp_path, "run", "d")  # judged, then the driver died while it was logged
    judged.started("T/poison")
    judged.judged("T/poison")
    assert InFlightJournal(tmp_path, "run", "e").deaths() == {"T/poison": 2}



def test_journal_keeps_events_until_the_run_id_is_known(tmp_path):
    """A new job judges before its run exists (kbx.tracking.thread): the events are written, in order,
    once it does, so a death after that blames the task."""
    journal = InFlightJournal(tmp_path, "", "a")
    journal.started("T/poison")
    journal.started("T/honest")
    journal.judged("T/honest")
    assert journal.deaths() == {} and not (tmp_path / ".kbx_cache").exists()
    journal.bind("run")
    journal.finished("T/honest")
    assert InFlightJournal(tmp_path, "run", "b").deaths() == {"T/poison": 1}
    events = [line.split('"event": "')[1].split('"')[0] for line in journal.path.read_text().splitlines()]
    assert events == ["started", "started", "judged", "finished"]


@pytest.mark.serial  # failed beside other files under pytest-xdist (another task judged with it): run alone
def test_a_driver_killing_kernel_is_quarantined_and_the_job_finishes(kbx_cli, tmp_path):
    import mlflow

    honest = (REPO / "tests" / "zoo" / "ok_inplace_relu.py").read_text()
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(line) for line in (
        {"file": "Activation/zoo_relu_inplace.py", "predict": honest},
        {"file": "Math/zoo_scale_add.py", "predict": KILL_DRIVER},
    )) + "\n")  # fmt: skip
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    args = ("kbx.run", "method=predictions", f"method.path={preds}", "hardware=cpu", "eval.sandbox=none",
            "task=[Activation/zoo_relu_inplace,Math/zoo_scale_add]",
            "eval.workers=1", "eval.secret_seed=false", "experiment=quarantine", f"tracking_uri={uri}",
            f"hydra.run.dir={tmp_path}/outputs")  # fmt: skip
    env = {"KBX_TASKS_DIR": str(FIXTURE_TASKS)}
    for _ in range(QUARANTINE_AFTER):
        code, out, err = kbx_cli(*args, env=env)
        assert code == -9, err[-2000:]  # the kernel killed its driver, again
    code, out, err = kbx_cli(*args, env=env)
    assert code == 0, err[-3000:]
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["quarantine"])
    jobs = runs[runs["tags.kbx.role"] == "job"]
    assert len(jobs) == 1 and jobs.iloc[0]["status"] == "FINISHED"
    assert jobs.iloc[0]["metrics.suite/n_quarantined"] == 1.0 and jobs.iloc[0]["metrics.suite/correct_rate"] == 1.0, out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith(("Math/", "Activation/"))}
    assert rows == {"Activation/zoo_relu_inplace": "ok", "Math/zoo_scale_add": "quarantined"}
