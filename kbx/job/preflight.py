"""Checks before any work: every mistake a user can make in a job's configuration is one line here,
found in seconds, rather than a traceback (or a kernel blamed) minutes into a run.

`check_config` checks the composed config against its schema (kbx/job/schema.py: every key's type,
range and choices, unknown keys, rules between keys), then what no schema can see: files that must
exist, directories that must take a file. It reads only the config and the file system, so
`kbx.run -m` runs it over every job of a multirun before the first starts; `check_tracking` asks the
tracking store once, with a short timeout, whether it answers at all.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import socket
import tempfile
import time
from pathlib import Path

from kbx.core.errors import ConfigError
from kbx.job import schema

TRACKING_CONNECT_TIMEOUT_S = 5.0  # an unreachable store is reported within this
# A server that accepted the connection is there; its answer may take longer: a fresh MLflow server with
# one worker on PostgreSQL, `services.sh status` ok, did not answer its first request within 5 s while CI
# shared a loaded 2-core machine (2026-11-27), and the job was refused as if nothing were listening.
TRACKING_ANSWER_TIMEOUT_S = 20.0
MLFLOW_PROBE_PATH = "/api/2.0/mlflow/experiments/get-by-name"
DB_DEFAULT_PORTS = {"postgresql": 5432, "postgres": 5432, "mysql": 3306, "mssql": 1433}


def check_config(cfg, root: Path) -> None:
    """The schema, then every check that needs no network and no task: the predictions file, writable paths."""
    schema.check(cfg)
    path = cfg.method.get("path")
    if path and not (root / path).exists():  # an absolute path stays itself
        raise ConfigError(f"predictions file not found: {root / path} (method.path)")
    if not str(cfg.get("tracking_uri") or ""):
        _check_writable(root / "mlruns", "the local MLflow store (set tracking_uri= to use another)")
    if "llm" in method_params(cfg.method) and str(cfg.llm.cache) != "off":
        cache = Path(str(cfg.llm.cache_dir))
        _check_writable(cache if cache.is_absolute() else root / cache, "llm.cache_dir (llm.cache=off: no cache)")


def method_params(method_cfg) -> dict[str, inspect.Parameter]:
    from hydra.utils import get_method

    return dict(inspect.signature(get_method(method_cfg._target_)).parameters)


def check_tracking(uri: str, timeout_s: float = TRACKING_CONNECT_TIMEOUT_S) -> None:
    """The tracking store answers: an HTTP server as MLflow's REST API, a database server on its port, a
    sqlite file's directory is writable. Raises ConfigError naming the URI and what to do."""
    if not uri:
        return
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme in ("http", "https"):
        _check_http(uri, timeout_s)
    elif scheme in DB_DEFAULT_PORTS:
        _check_port(uri, scheme, timeout_s)
    elif scheme == "sqlite" and uri.startswith("sqlite:///"):
        db = Path(uri.removeprefix("sqlite:///"))
        _check_writable(db.parent, f"the directory of the tracking store {uri}")
    elif (scheme == "file" or ":" not in uri) and os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() != "true":
        # MLflow 3 refuses new writes to a directory store, after the job's work, with a traceback
        raise ConfigError(f"tracking_uri={uri}: MLflow no longer writes to a directory (file) store; use "
                          "sqlite:///PATH/mlflow.db (or leave tracking_uri empty for kbx's store under mlruns/), "
                          "or set MLFLOW_ALLOW_FILE_STORE=true to write there anyway")  # fmt: skip


def _check_http(uri: str, timeout_s: float) -> None:
    """One request to MLflow's REST API: a tracking server answers with JSON (an experiment, or an
    error code such as RESOURCE_DOES_NOT_EXIST), or asks for credentials (401/403, which MLflow's
    own environment variables supply); anything else is not a tracking server."""
    import requests

    start = time.monotonic()
    try:
        reply = requests.get(uri.rstrip("/") + MLFLOW_PROBE_PATH, params={"experiment_name": "kbx-preflight"},
                             timeout=(timeout_s, TRACKING_ANSWER_TIMEOUT_S))  # fmt: skip
    except requests.exceptions.RequestException as exc:
        raise ConfigError(_unreachable(uri, _reason(exc), time.monotonic() - start)) from None
    if reply.status_code in (401, 403):
        return
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not (isinstance(body, dict) and ("experiment" in body or "error_code" in body)):
        raise ConfigError(_unreachable(uri, f"HTTP {reply.status_code}, not an MLflow tracking server",
                                       time.monotonic() - start))  # fmt: skip


def _check_port(uri: str, scheme: str, timeout_s: float) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    host, port = parts.hostname or "localhost", parts.port or DB_DEFAULT_PORTS[scheme]
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ConfigError(_unreachable(uri, exc.strerror or str(exc), time.monotonic() - start)) from None


def _unreachable(uri: str, reason: str, waited_s: float) -> str:
    return (f"tracking store {uri} is unreachable ({reason}, after {waited_s:.1f} s): start it (make services), "
            "or point tracking_uri= (or MLFLOW_TRACKING_URI) at a running one; empty uses the local store in mlruns/")  # fmt: skip


def _reason(exc: BaseException) -> str:
    text = str(exc).lower()
    for needle, said in (("refused", "connection refused"), ("timed out", "timed out"),
                         ("name or service not known", "unknown host"), ("failed to resolve", "unknown host")):  # fmt: skip
        if needle in text:
            return said
    return type(exc).__name__


def check_output_file(path: str | Path, what: str) -> None:
    """`path` can be written: its directory exists and takes a file (checked by writing one)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a directory, not a file")
    if not path.parent.is_dir():
        raise ConfigError(f"{what} {path}: directory {path.parent} does not exist")
    _probe(path.parent, f"{what} {path}")


def _check_writable(directory: Path, what: str) -> None:
    """`directory` exists (or can be created, nearest existing ancestor writable) and takes a file."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{what}: {existing} is not a directory")
    _probe(existing, f"{what} ({directory})")


def _probe(directory: Path, what: str) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=".kbx-probe-", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{what} is not writable: {exc.strerror or exc}") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
