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
