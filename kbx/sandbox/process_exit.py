"""How the evaluator's long-lived helper processes (the judge, the zygote) end once the driver
closes their input."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def exit_at_once(code: int = 0) -> NoReturn:
    """Flush and leave without the interpreter's teardown. Unloading torch and triton took a judge
    0.66 s and a zygote 0.70 s (CPU machine, 2026-11-27), and the driver waits for both at every
    close: the end of every kbx.run job, sweep trial and evaluator. Nothing is left that the OS does
    not release: replies are written a line at a time, and a zygote has killed its children."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
