"""Checks before any work: every mistake a user can make in a job's configuration is one line here,
found in seconds, rather than a traceback (or a kernel blamed) minutes into a run.

`check_config` reads only the composed config and the file system, so `kbx.run -m` runs it over
every job of a multirun before the first starts; `check_tracking` asks the tracking store once,
with a short timeout, whether it answers at all.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import socket
import tempfile
import time
from pathlib import Path

from kbx.core.errors import ConfigError

TRACKING_CONNECT_TIMEOUT_S = 5.0  # an unreachable store is reported within this
# A server that accepted the connection is there; its answer may take longer: a fresh MLflow server with
# one worker on PostgreSQL, `services.sh status` ok, did not answer its first request within 5 s while CI
# shared a loaded 2-core machine (2026-11-27), and the job was refused as if nothing were listening.
TRACKING_ANSWER_TIMEOUT_S = 20.0
MLFLOW_PROBE_PATH = "/api/2.0/mlflow/experiments/get-by-name"
# The address space a CPU worker needs to import torch and Triton and run a task's correctness cases:
# Activation/gelu and MatrixMultiply/matmul experts pass at 1 GiB and crash at 0.5 GiB (docs/BENCHMARKS.md),
# so a limit below this would charge kbx's own floor to the kernel.
MIN_MEMORY_LIMIT_GB = 2.0
DB_DEFAULT_PORTS = {"postgresql": 5432, "postgres": 5432, "mysql": 3306, "mssql": 1433}
CONF_METHOD_DIR = Path(__file__).resolve().parents[2] / "conf" / "method"


def check_config(cfg, root: Path) -> None:
    """Every check that needs no network and no task: experiment name, rounds and limits, method keys,
    the predictions file, writable paths."""
    if not str(cfg.get("experiment") or "").strip():
        raise ConfigError("experiment must name an MLflow experiment (e.g. experiment=kbx), got an empty value")
    rounds = cfg.iteration.rounds
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ConfigError(f"iteration.rounds must be a positive integer, got {rounds!r}")
    check_eval_limits(cfg.eval)
    check_method_keys(cfg.method)
    path = cfg.method.get("path")
    if isinstance(path, str) and path and not (root / path).exists():  # an absolute path stays itself
        raise ConfigError(f"predictions file not found: {root / path} (method.path)")
    if not str(cfg.get("tracking_uri") or ""):
        _check_writable(root / "mlruns", "the local MLflow store (set tracking_uri= to use another)")
    llm = cfg.get("llm")
    if llm is not None:
        for key in ("timeout_s", "preflight_timeout_s"):
            _positive(f"llm.{key}", llm.get(key))
        if "llm" in method_params(cfg.method) and str(llm.get("cache", "off")) != "off":
            cache = Path(str(llm.cache_dir))
            _check_writable(cache if cache.is_absolute() else root / cache, "llm.cache_dir (llm.cache=off: no cache)")


def check_eval_limits(e) -> None:
    """Limits an honest kernel can meet: positive timeouts and workers, a memory cap above kbx's own floor."""
    workers = e.get("workers")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ConfigError(f"eval.workers must be a positive integer, got {workers!r}")
    for key in ("check_timeout_s", "time_timeout_s"):
        _positive(f"eval.{key}", e.get(key))
    _positive("eval.interpreter_timeout_factor", e.get("interpreter_timeout_factor", 1), unit="number")
    memory = e.get("memory_limit_gb")
    if not _is_number(memory) or memory < MIN_MEMORY_LIMIT_GB:
        raise ConfigError(f"eval.memory_limit_gb must be at least {MIN_MEMORY_LIMIT_GB:g} (a worker needs that much "
                          f"address space to import torch and Triton), got {memory!r}")  # fmt: skip
    free = e.get("min_free_gpu_gb")
    if not _is_number(free) or free < 0:
        raise ConfigError(f"eval.min_free_gpu_gb must be a non-negative number, got {free!r}")
    check_timing(e.get("timing") or {})


def check_timing(timing) -> None:
    """eval.timing: only TimingPolicy's knobs, each a positive number."""
    import dataclasses

    from kbx.contract.timing_policy import TimingPolicy

    known = {f.name for f in dataclasses.fields(TimingPolicy)}
    for key, value in dict(timing).items():
        if key not in known:
            raise ConfigError(f"eval.timing.{key} is not a timing setting (known: {', '.join(sorted(known))})")
        _positive(f"eval.timing.{key}", value, unit="number")


def method_params(method_cfg) -> dict[str, inspect.Parameter]:
    from hydra.utils import get_method

    return dict(inspect.signature(get_method(method_cfg._target_)).parameters)


def check_method_keys(method_cfg) -> None:
    """Each key under `method` is a parameter of that method's builder; a key of another method
    (e.g. `method.path` with method=reference) names the method it belongs to."""
    params = method_params(method_cfg)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    name = method_cfg.get("name", "?")
    for key in method_cfg:
        if key == "_target_" or key in params:
            continue
        owners = [m for m, keys in _method_keys().items() if key in keys and m != name]
        where = f"it belongs to method={'/'.join(owners)}" if owners else f"valid keys: {', '.join(sorted(params))}"
        raise ConfigError(f"method.{key} is not a setting of method={name} ({where})")


def _method_keys() -> dict[str, set[str]]:
    """Method name -> its keys, from conf/method/*.yaml."""
    import yaml

    out = {}
    for path in sorted(CONF_METHOD_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        out[path.stem] = set(data) - {"_target_"}
    return out


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


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(name: str, value, unit: str = "number of seconds") -> None:
    if not _is_number(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive {unit}, got {value!r}")
