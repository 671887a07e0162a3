"""Freezing a candidate's process tree: threads, children, setsid escapees and double forks all stop."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kbx.sandbox import freezer

# A "candidate" that spins in a thread, starts a child that calls setsid, and a double-forked
# grandchild, then prints every pid it started.
TREE = textwrap.dedent("""
    import os, sys, threading, time
    def spin():
        while True:
            pass
    threading.Thread(target=spin, daemon=True).start()
    pids = []
    child = os.fork()
    if child == 0:
        os.setsid()
        spin()
    pids.append(child)
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:
        grandchild = os.fork()
        if grandchild == 0:
            spin()
        os.write(w, str(grandchild).encode())
        os._exit(0)
    os.waitpid(middle, 0)
    pids.append(int(os.read(r, 64)))
    print(" ".join(map(str, pids)), flush=True)
    spin()
""")


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_freeze_stops_every_process_of_the_tree_and_thaw_resumes_them():
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        started = [int(p) for p in proc.stdout.readline().split()]
        # The double-forked grandchild is reparented away from the tree (here to init or a
        # subreaper); in the sandbox it stays in the tree, reparented to the worker (its PID 1).
        tree_pids = [proc.pid, started[0]]
        stopped = freezer.freeze([proc.pid])
        assert set(tree_pids) <= stopped
        time.sleep(0.1)
        assert all(_state(pid) == "T" for pid in tree_pids)
        before = [_cpu_ticks(pid) for pid in tree_pids]
        time.sleep(0.3)
        assert [_cpu_ticks(pid) for pid in tree_pids] == before  # the spinning thread stopped too
        freezer.thaw(stopped)
        time.sleep(0.3)
        assert all(_state(pid) != "T" for pid in tree_pids)
        assert all(t > b for t, b in zip([_cpu_ticks(pid) for pid in tree_pids], before, strict=True))
    finally:
        for pid in [proc.pid, *started]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def test_freeze_of_a_gone_process_is_empty():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert freezer.freeze([proc.pid]) == set()


# A sandboxed candidate that leaves two spinning processes behind - one in a session of its own,
# one double-forked (reparented to the worker, its PID namespace's init) - then hangs in its entry.
SANDBOXED = """
import os, subprocess, sys, time

MARK = "{mark}"
subprocess.Popen([sys.executable, "-c", "# " + MARK + "\\nwhile True: pass"], start_new_session=True)
if os.fork() == 0:
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "# " + MARK + "\\nwhile True: pass"])
    os._exit(0)


def scale_add(input, other):
    time.sleep(600)
"""
APPEAR_S = 60.0


def _marked(mark: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if mark.encode() in f.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def test_the_zygote_freezes_a_sandboxed_candidates_whole_tree():
    """Through the real zygote and sandbox (as CI runs them: an unprivileged user, so the zygote
    reads its tree through a /proc of its own PID namespace): every process the candidate left, an
    escaped session and a double fork included, stops on freeze and runs again on thaw; `release`
    (the baseline is measured, the window passes to its owner) continues the worker alone."""
    import threading
    import uuid

    from kbx.contract.attempt import Attempt
    from kbx.driver.evaluator import EvalSettings, Evaluator
    from kbx.tasks import discover
    from tests.conftest import FIXTURE_TASKS

    mark = f"kbx-freeze-test-{uuid.uuid4().hex[:8]}"
    task = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]
    with Evaluator(EvalSettings(device="cpu", tasks_dir=str(FIXTURE_TASKS), workers=1, check_timeout_s=300)) as ev:
        thread = threading.Thread(target=ev.evaluate_one, args=(Attempt(task, SANDBOXED.format(mark=mark), "f"),))
        thread.start()
        deadline = time.monotonic() + APPEAR_S
        while len(pids := _marked(mark)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        try:
            assert len(pids) == 2, pids
            assert ev.zygote.freeze()
            time.sleep(0.3)
            assert [_state(p) for p in pids] == ["T", "T"]
            before = [_cpu_ticks(p) for p in pids]
            time.sleep(0.3)
            assert [_cpu_ticks(p) for p in pids] == before
            worker = _parent(pids[0])  # both are the worker's children: it is their namespace's init
            assert _parent(pids[1]) == worker and _state(worker) == "T"
            ev.zygote.release(next(iter(ev.active)))
            time.sleep(0.3)
            assert _state(worker) != "T" and [_state(p) for p in pids] == ["T", "T"]
            ev.zygote.thaw()
            time.sleep(0.5)
            assert all(_state(p) != "T" for p in pids) and all(
                _cpu_ticks(p) > b for p, b in zip(pids, before, strict=True))  # fmt: skip
        finally:
            for job_id in list(ev.active):
                ev.zygote.kill(job_id)
            thread.join(timeout=60)
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _marked(mark)  # they died with the worker, their namespace's init


UNPRIVILEGED = """
import os, signal, sys, time
from kbx.sandbox import freezer
from kbx.sandbox.namespaces import IsolatedForker

forker = IsolatedForker()  # not root: the zygote's own user and PID namespaces, and their /proc
worker = forker.fork()
if worker == 0:  # PID 1 of a fresh namespace, as a worker is
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
    while True:
        pass
time.sleep(1.0)
members = freezer.tree(worker)
stopped = freezer.freeze([worker])
time.sleep(0.3)
states = [open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] for p in members]
freezer.thaw(stopped)
os.kill(worker, signal.SIGKILL)
print(len(members), sorted(stopped) == sorted(members), " ".join(states))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser") or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root, runuser and a system python3 to run as another user")  # fmt: skip
def test_an_unprivileged_zygote_walks_its_own_namespace():
    """As a user other than root the zygote's pids are those of its own PID namespace; it mounts a
    /proc of that namespace, so the tree it walks is its workers' and not some host process's."""
    from tests.conftest import REPO

    done = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", UNPRIVILEGED],
                          capture_output=True, text=True, cwd="/", env={"PYTHONPATH": str(REPO), "PATH": os.environ["PATH"]},
                          timeout=60)  # fmt: skip
    assert done.stdout.split() == ["2", "True", "T", "T"], done.stdout + done.stderr
