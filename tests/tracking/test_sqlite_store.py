"""A new sqlite store made from kbx's cached template is the store MLflow would have migrated itself."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from kbx.tracking import sqlite_store


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """kbx's cache of a job started in tmp_path (the Default experiment's artifact root follows it too)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path / sqlite_store.CACHE_DIR


def rows(db, query):
    with contextlib.closing(sqlite3.connect(db)) as con:
        return con.execute(query).fetchall()


def schema(db):
    """Each table's and index's definition, its clauses as a set: MLflow's own migrations write a table's
    constraints in an order that changes between two migrated stores (hash randomisation)."""
    return {name: (kind, frozenset(line.strip().rstrip(",").strip() for line in (sql or "").splitlines()))
            for kind, name, sql in rows(db, "SELECT type, name, sql FROM sqlite_master")}  # fmt: skip


def experiments(db):
    return rows(db, "SELECT experiment_id, name, artifact_location, lifecycle_stage FROM experiments")


def test_a_store_from_the_template_matches_one_migrated_from_scratch(tmp_path, cache):
    scratch = tmp_path / "scratch.db"
    sqlite_store._migrate(scratch)
    first, second = tmp_path / "a" / "mlflow.db", tmp_path / "b" / "mlflow.db"
    for db in (first, second):
        db.parent.mkdir()
        sqlite_store.create(db)
    template = sqlite_store.template_path()
    assert template.resolve().parent == cache and template.is_file()
    assert rows(template, "SELECT count(*) FROM experiments") == [(0,)]  # Default is added on open, here
    for db in (first, second):
        assert schema(db) == schema(scratch)
        assert rows(db, "SELECT * FROM alembic_version") == rows(scratch, "SELECT * FROM alembic_version")
        assert experiments(db) == experiments(scratch) == [(0, "Default", str(tmp_path / "mlruns" / "0"), "active")]
        assert not list(db.parent.glob(f"*{sqlite_store.CREATING_SUFFIX}*"))
    assert not list(cache.glob(f"*{sqlite_store.CREATING_SUFFIX}*"))


def test_the_second_store_copies_the_template(tmp_path, cache):
    """Kept once, then copied: the file made for the first store serves the second unchanged."""
    sqlite_store.create(tmp_path / "first.db")
    template = sqlite_store.template_path()
    with contextlib.closing(sqlite3.connect(template)) as con, con:  # a mark only a copy can carry
        con.execute("INSERT INTO experiment_tags (key, value, experiment_id) VALUES ('mark', 'template', 0)")
    made = template.stat().st_mtime_ns
    sqlite_store.create(tmp_path / "second.db")
    assert template.stat().st_mtime_ns == made
    assert rows(tmp_path / "second.db", "SELECT key, value FROM experiment_tags") == [("mark", "template")]


def test_a_damaged_template_costs_only_time_and_is_made_again(tmp_path, cache):
    sqlite_store.create(tmp_path / "first.db")
    template = sqlite_store.template_path()
    template.write_bytes(b"SQLite format 3\x00 cut short")
    db = tmp_path / "second.db"
    sqlite_store.create(db)
    assert experiments(db)[0][1] == "Default" and not template.exists()
    sqlite_store.create(tmp_path / "third.db")
    assert rows(template, "SELECT count(*) FROM experiments") == [(0,)]


def test_a_cache_path_that_is_a_file_still_gives_a_store(tmp_path, cache):
    """A cache kbx cannot write (here its folder's place is taken by a file) only costs the migration."""
    cache.write_text("not a folder")
    db = tmp_path / "mlflow.db"
    sqlite_store.create(db)
    assert experiments(db)[0][1] == "Default"
