"""Progress you can read while an evaluation runs: attempts per stage, the GPU's time held alone,
and any attempt stuck in one stage, by name. Used by `kbx.bench eval` and `kbx.run`."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

EVERY_S = 30.0  # a status line this often
STALL_S = 30.0  # an attempt this long in one stage is named as holding things up
STACKS_AFTER_S = 120.0  # ...and once one has been stuck this long, every process's stacks are printed (once)


def watch(evaluator, every_s: float = EVERY_S, out=sys.stderr, prefix: str = "kbx: ",
          also: Callable[[], str] | None = None) -> threading.Event:  # fmt: skip
    """Start printing `evaluator.progress()` every `every_s`, and `also()` beside it (what else runs:
    LLM calls in flight, so an idle evaluator does not read as an idle job); set the returned event to stop."""
    stop = threading.Event()

    def loop() -> None:
        dumped = False
        while not stop.wait(every_s):
            lines = [prefix + (f"judging: {evaluator.progress()}; {also()}" if also else evaluator.progress())]
            stuck = [(task, phase, secs) for task, phase, secs in evaluator.in_flight() if secs > STALL_S]
            lines += [f"{prefix}  stalled {secs:.0f} s: {task} in '{phase}'" for task, phase, secs in stuck]
            print("\n".join(lines), file=out, flush=True)
            if not dumped and any(secs > STACKS_AFTER_S for _, _, secs in stuck):
                dumped = True
                print(f"{prefix}stacks of every process:\n{evaluator.dump_stacks()}", file=out, flush=True)

    threading.Thread(target=loop, daemon=True, name="kbx-watch").start()
    return stop
