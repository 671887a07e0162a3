"""Bring runs home: copy the runs of one MLflow store into another, once.

    python -m kbx.sync SRC [DST] [--experiment NAME ...]

A GPU node without network logs to its local store (`mlruns/`: a sqlite database, artifacts beside
it); carried home, SRC is that directory (or its `mlflow.db`, or any tracking URI), and DST the main
store (default `$MLFLOW_TRACKING_URI`). Every finished run of each experiment is recreated in the
experiment of the same name in DST with its name, start and end times, status, tags, params, every
metric's full history (value, timestamp, step) and its artifacts; `mlflow.parentRunId` is pointed
at the parent's copy, so job/task nesting survives whatever the layout.

Idempotent: each copy is tagged `kbx.source_run` with the id of the run it came from (or of the run
that one came from), and a run whose copy is already in DST is skipped, so importing the same store
again, or a store that grew, adds only what is new. A copy is tagged `kbx.source_run` only as its
last write; one cut short (tagged `kbx.import_pending` alone) is deleted and redone by the next import.
A run that has not ended (RUNNING) is left for a later import, with the runs nested under it, since
its copy would never be updated. A copy's traces are written before its source tag, and deleted with
a cut-short copy. Not copied: datasets (run inputs) and logged models, which kbx does not write.
"""

import argparse
import logging
import os
import sys

from kbx.tracking.sync import SyncError, store_uri, sync


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbx.sync", description=__doc__.splitlines()[0])
    parser.add_argument("src", help="the store to copy from: a mlruns/ directory, its mlflow.db, or a tracking URI")
    parser.add_argument("dst", nargs="?", default=os.environ.get("MLFLOW_TRACKING_URI", ""),
                        help="the store to copy into (default: $MLFLOW_TRACKING_URI)")  # fmt: skip
    parser.add_argument("--experiment", action="append", default=[], help="only this experiment (repeatable)")
    parser.add_argument("--allow-missing-artifacts", action="store_true",
                        help="copy a run whose artifact folder cannot be found without artifacts (warned)")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        if not args.dst:
            raise SyncError("no destination: give DST or set MLFLOW_TRACKING_URI")
        results = sync(store_uri(args.src), store_uri(args.dst, must_exist=False), args.experiment,
                       args.allow_missing_artifacts)
    except SyncError as exc:
        print(f"kbx: error: {exc}", file=sys.stderr)
        return 2
    for name, counts in results.items():
        print(f"kbx.sync: {name}: {counts.imported} runs imported, {counts.already} already there, "
              f"{len(counts.unfinished)} not ended yet (left for later), {counts.redone} unfinished copies replaced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
