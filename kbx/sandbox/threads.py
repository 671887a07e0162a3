"""Threads a candidate started itself, told apart from those torch, Triton and Inductor start.

Used by the timing (a thread started while a shape was timed is hidden work) and by the worker, which
reports the candidate's own threads to the driver (kbx.driver.hogs: GPU work that keeps running while
the candidate is stopped comes from such a thread or a child process, never from the entry's call).
"""

from __future__ import annotations

import threading

# Threads that torch, Triton or Inductor start for themselves (compile workers, the autotuner's
# pool) are theirs, not the candidate's.
STACK_MODULES = ("torch", "triton", "concurrent.futures", "multiprocessing")


def foreign_threads(before: frozenset | set = frozenset()) -> list[str]:
    """Names of the live threads, other than those in `before` (idents), started by code other than
    torch's, Triton's or Inductor's."""
    out = []
    for t in threading.enumerate():
        target = getattr(t, "_target", None)
        module = getattr(target, "__module__", None) or type(t).__module__ or ""
        if t.ident not in before and t.is_alive() and not module.startswith(STACK_MODULES):
            out.append(t.name)
    return out


MAX_REPORTED = 20  # thread names in one report
NAME_CHARS = 80


class ThreadReport:
    """Tells the driver (Event.THREADS, through `send`) which threads of the candidate's own are alive,
    whenever that changes: after the import and after each call of `around(entry)`. `before` holds the
    worker's own threads, started before the candidate was imported."""

    def __init__(self, send, before: set) -> None:
        self.send, self.before, self.reported = send, frozenset(before), []

    def __call__(self) -> None:
        names = [name[:NAME_CHARS] for name in foreign_threads(self.before)[:MAX_REPORTED]]
        if names != self.reported:
            self.reported = names
            self.send(names)

    def around(self, entry):
        """`entry`, reporting after every call, however it ends."""

        def call(*args, **kwargs):
            try:
                return entry(*args, **kwargs)
            finally:
                self()

        return call
