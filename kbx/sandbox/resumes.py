"""How many times this process was resumed after a freeze (SIGCONT), for the timing's estimate.

While the GPU is shared, the driver freezes every candidate's worker for other attempts' exclusive
windows (kbx.sandbox.freezer: SIGSTOP, then SIGCONT). A call timed across a freeze is timed long,
on the host and, when the freeze stops its launches, on its events too; the worker counts the
SIGCONTs so it can tell such a call from a slow one (kbx.sandbox.timing). SIGSTOP cannot be caught;
SIGCONT can, and with SA_RESTART (`siginterrupt(..., False)`) no system call of torch, CUDA or the
candidate is cut short by it. A candidate that replaces the handler only hides freezes from its own
estimate, which can only make it look slower.
"""

from __future__ import annotations

import signal

_count = 0


def _on_resume(signum, frame) -> None:
    global _count
    _count += 1


def install() -> None:
    signal.signal(signal.SIGCONT, _on_resume)
    signal.siginterrupt(signal.SIGCONT, False)


def count() -> int:
    return _count
