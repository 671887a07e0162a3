"""Freezing a candidate's process tree: threads, children, setsid escapees and double forks all stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from kbx.worker import freezer

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
