"""The evaluator's working directories (`kbx-eval-<pid>-*`, in /dev/shm when it has room): each
is named for the driver process that owns it, so a later driver can remove the ones whose owner
died without cleaning up (killed with SIGKILL, out of memory), and never one still in use."""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger("kbx")

PREFIX = "kbx-eval-"
_OWNED = re.compile(rf"^{PREFIX}(\d+)-")
PID_REUSE_SLACK_S = 1.0  # clock granularity between a process's start time and a directory's mtime


def create(parent: str | None) -> Path:
    """A fresh working directory for this process, after removing those of dead owners beside it."""
    parent = parent or tempfile.gettempdir()
    remove_stale(Path(parent))
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))


def remove_stale(parent: Path) -> list[Path]:
    """Remove the working directories under `parent` whose owning process is dead; returns them.
    Directories without an owner in their name (older kbx) are left alone."""
    removed = []
    for path in parent.glob(f"{PREFIX}*"):
        match = _OWNED.match(path.name)
        try:
            info = path.stat()
        except OSError:
            continue
        if not match or not path.is_dir() or info.st_uid != os.getuid():
            continue
        if owner_alive(int(match.group(1)), info.st_mtime):
            continue
        shutil.rmtree(path, ignore_errors=True)
        log.info("removed %s: its driver (pid %s) is gone", path, match.group(1))
        removed.append(path)
    return removed


def owner_alive(pid: int, changed_at: float) -> bool:
    """Whether `pid` is the process that wrote a directory last changed at `changed_at`: alive, and
    started before that (a process started later only reuses the dead owner's pid)."""
    import psutil

    if pid == os.getpid():
        return True
    try:
        return psutil.Process(pid).create_time() <= changed_at + PID_REUSE_SLACK_S
    except psutil.Error:
        return False

