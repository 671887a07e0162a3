"""Bring runs home: copy the runs of one MLflow store into another, once.

    python -m kbx.sync SRC [DST] [--experiment NAME ...]

SRC is a node's local store (its `mlruns/`, its `mlflow.db`, or any tracking URI), DST the main store
(default `$MLFLOW_TRACKING_URI`). What is copied, and why importing twice adds nothing: kbx.tracking.sync.
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
