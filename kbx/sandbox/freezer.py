"""Freezing candidates' whole process trees while another attempt holds the GPU alone.

A worker is the init of its own PID namespace (kbx.sandbox.namespaces), so everything a candidate
starts - threads, processes, `setsid` or double-forked escapees, processes in nested namespaces -
stays a descendant of it. Freezing walks that tree through /proc (the zygote's /proc shows its own
PID namespace) and stops every member with SIGSTOP, which no process can catch, block or ignore,
and which stops every thread of a process at once. A process forking while the walk runs is
caught by the next pass: a stopped process cannot fork again, so the passes end. Thawing sends
SIGCONT to exactly the processes that were stopped.
"""

from __future__ import annotations

import os
import signal

MAX_PASSES = 16  # walks of a tree until no unstopped member is left (each pass stops what it finds)


def children(pid: int) -> list[int]:
    """Direct children of a process (of every one of its threads)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            continue
    return out


def tree(root: int) -> list[int]:
    """The root and all its descendants, parents before children."""
    out, queue = [], [root]
    while queue:
        pid = queue.pop(0)
        out.append(pid)
        queue += children(pid)
    return out


def freeze(roots: list[int]) -> set[int]:
    """SIGSTOP every process of every root's tree; the pids stopped (for `thaw`)."""
    stopped: set[int] = set()
    for _ in range(MAX_PASSES):
        members = [pid for root in roots for pid in tree(root)]
        found = [pid for pid in members if pid not in stopped]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
            except (ProcessLookupError, PermissionError):
                continue
    return stopped


def thaw(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            continue
