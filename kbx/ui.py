"""`python -m kbx.ui [--experiment NAME] [--port N]`: print where the jobs are, then serve the MLflow UI.

The UI runs on the local store (`mlruns/mlflow.db`, kbx's default); the printed link opens the
experiment's jobs side by side (see kbx.tracking.ui_links).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kbx.tracking import ui_links
from kbx.tracking.tracker import DB_FILE, DEFAULT_STORE_DIR

DEFAULT_PORT = 5000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kbx.ui", description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="kbx", help="the kbx experiment to open (default: kbx)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    db = Path(DEFAULT_STORE_DIR) / DB_FILE
    if not db.exists():
        print(f"kbx: error: no local store at {db}: run a job first (make run)", file=sys.stderr)
        sys.exit(2)
    store = f"sqlite:///{db}"
    print(jobs_link(store, args.experiment, args.port), flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store,
                              "--port", str(args.port)])  # fmt: skip


def jobs_link(store: str, experiment: str, port: int) -> str:
    """A line with the link to the experiment's jobs, or the list of experiments when it is absent."""
    from mlflow.tracking import MlflowClient

    base = f"http://127.0.0.1:{port}"
    found = MlflowClient(tracking_uri=store).get_experiment_by_name(experiment)
    if found is None:
        return f"kbx: no experiment named {experiment!r} in {store} yet; the UI lists what there is: {base}"
    return f"kbx jobs of {experiment!r}, side by side: {base}/#{ui_links.runs_path(found.experiment_id)}"


if __name__ == "__main__":
    main()
