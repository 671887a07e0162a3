"""`python -m kbx.sweep SWEEP.yaml [n_trials=N] [storage=URL] [study=NAME] [kbx.run overrides...]`:
an Optuna study over kbx.run configurations; see sweeps/*.yaml and docs/SWEEPS.md."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

USAGE = "usage: python -m kbx.sweep SWEEP.yaml [n_trials=N] [storage=URL] [study=NAME] [kbx.run overrides ...]"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else 2
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    from kbx.core.errors import EXIT_USER_ERROR, USER_ERRORS
    from kbx.llm.keys import refuse_key_on_command_line
    from kbx.sweeps import spec as sweep_spec
    from kbx.sweeps.study import run

    def interrupt(signum, frame):  # SIGTERM behaves like Ctrl-C: the trial is marked FAIL and queued again
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        refuse_key_on_command_line(argv[1:])
        outcome = run(sweep_spec.load(argv[0], argv[1:]), Path.cwd())
    except USER_ERRORS as exc:
        print(f"kbx: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("kbx: sweep interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    running = f", {outcome.running} running in other workers" if outcome.running else ""
    print(f"study {outcome.study} ({outcome.storage}): {outcome.finished} finished trial(s){running}, "
          f"{outcome.started} started by this run")  # fmt: skip
    if outcome.failed:
        print(f"kbx: warning: {len(outcome.failed)} trial(s) failed; first: {outcome.failed[0]}", file=sys.stderr)
    if outcome.finished + outcome.running < outcome.wanted:
        print(f"kbx: error: study {outcome.study} has {outcome.finished} of {outcome.wanted} trials finished",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
