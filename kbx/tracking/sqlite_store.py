"""Creating kbx's embedded sqlite store: whole or not at all, one creator at a time, from a copy.

MLflow builds a new sqlite store by running its whole chain of schema migrations: 1.5-2 s of CPU on
a 2-core machine (MLflow 3.17, 2026-12-08: docs/BENCHMARKS.md, "Measurements the code cites"),
paid by every job that starts a new store. The schema depends only on MLflow's version, so the first
creation keeps an empty copy (its tables, its schema version, no experiment) in kbx's cache
(`.kbx_cache/`), and every later one copies that file. MLflow then adds the Default experiment itself
on first open, with the artifact root of the process that opens it, exactly as in a store it
migrated itself. A template that cannot be written or read (a read-only working directory, a damaged
file) costs only the time: the store is migrated from scratch, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

CREATING_SUFFIX = ".creating-"  # a new sqlite store while it is made (then renamed into place)
CACHE_DIR = Path(".kbx_cache")  # kbx's cache, beside the attempt costs and the LLM cache
UNIQUE_HEX = 12  # hex digits that keep names of files being made distinct
DEFAULT_EXPERIMENT_ID = 0  # MLflow's Default experiment: recreated on open, so never kept in the template


@contextlib.contextmanager
def init_lock(db: Path):
    """Jobs started together on one host (a submitit_local multirun) would race to create the
    tables of a new sqlite store (MLflow's alembic migration fails in all but one): one at a time."""
    with open(db.with_name(db.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def create(db: Path) -> None:
    """Make the store at `db` in a file beside it, renamed into place once whole: a driver killed
    meanwhile leaves no half-made store that every later run would fail to open, only a leftover
    that the next creation removes (the caller holds `init_lock`)."""
    for stale in db.parent.glob(f"{db.name}{CREATING_SUFFIX}*"):
        stale.unlink(missing_ok=True)
    creating = _beside(db)
    if not _from_template(creating):
        creating = _beside(db)
        _migrate(creating)
    os.replace(creating, db)


def _beside(path: Path) -> Path:
    """A name for a file being made beside `path`, never used before: MLflow keeps each database
    name's engine (an open connection) for the life of the process, so a reused name would reach
    the file that name held before."""
    return path.with_name(f"{path.name}{CREATING_SUFFIX}{os.getpid()}-{uuid.uuid4().hex[:UNIQUE_HEX]}")


def template_path() -> Path:
    import mlflow

    return CACHE_DIR / f"mlflow-{mlflow.__version__}-empty.db"


def _migrate(db: Path) -> None:
    """MLflow's own creation: every migration, then the Default experiment."""
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()


def _from_template(db: Path) -> bool:
    """Copy the template to `db` (made first if missing) and let MLflow open it; False where that
    fails, with `db` and the template removed (the next creation makes a new one), so the caller
    migrates from scratch."""
    template = template_path()
    try:
        if not template.is_file():
            _make_template(template)
        shutil.copyfile(template, db)
        _migrate(db)  # no migration runs: MLflow checks the schema version and adds the Default experiment
        return True
    except Exception:  # a cache we cannot use is only slower, never an error
        for path in (db, template):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        return False


def _make_template(template: Path) -> None:
    """A migrated store with no experiment in it, renamed into place whole (creators may race)."""
    template.parent.mkdir(parents=True, exist_ok=True)
    building = _beside(template)
    try:
        _migrate(building)
        with contextlib.closing(sqlite3.connect(building)) as con, con:
            con.execute("DELETE FROM experiment_tags WHERE experiment_id = ?", (DEFAULT_EXPERIMENT_ID,))
            con.execute("DELETE FROM experiments WHERE experiment_id = ?", (DEFAULT_EXPERIMENT_ID,))
        os.replace(building, template)
    finally:
        building.unlink(missing_ok=True)
