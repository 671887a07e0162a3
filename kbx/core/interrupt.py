"""Ctrl-C in a command-line entry point: one line saying what was kept, and out within a second.

Not sys.exit: the interpreter would join the judging threads, each waiting out its attempt in flight
(a thread pool's workers are joined at exit), so Ctrl-C would take as long as the slowest attempt
and end in a traceback. What was finished is written before this is called.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

EXIT_INTERRUPTED = 130  # the shell's code for a process ended by SIGINT
CLOSE_WAIT_S = 1.0  # how long the evaluator may take to close its processes before the exit


def exit_interrupted(note: str, close: Callable[[], None] | None = None) -> NoReturn:
    """Print `note` (one line), give `close` (the evaluator's) up to CLOSE_WAIT_S, and leave at once."""
    print(note, file=sys.stderr)
    if close is not None:
        closing = threading.Thread(target=close, daemon=True)
        closing.start()
        closing.join(CLOSE_WAIT_S)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)
