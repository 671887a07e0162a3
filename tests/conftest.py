"""Shared fixtures and markers. `gpu` tests run only where CUDA is available (a GPU machine)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KBX_SHARED_DIR") or REPO.parent / "shared")  # a worktree elsewhere names it
CORPUS = SHARED / "corpus" / "geak_rounds.jsonl"
FIXTURE_TASKS = REPO / "tests" / "fixtures" / "tasks"


# Files whose tests take minutes on 2 cores (the expert kernels under the interpreter, the tolerance
# audit, the zoo's worker processes); with every `e2e` test they are `slow`, left out of the inner
# loop's `pytest -m "not slow"`.
SLOW_FILES = ("tests/experts/test_experts.py", "tests/experts/test_expert_compile.py",
              "tests/quality/test_tolerance_audit.py", "tests/zoo/test_zoo.py", "tests/tasks/test_tasks.py",
              "tests/driver/test_harness_faults.py")  # fmt: skip


def pytest_collection_modifyitems(config, items):
    import torch

    from tests.xdist_schedule import LONG

    slow = tuple(unit.split("::")[0] for unit in LONG) + SLOW_FILES
    for item in items:
        if "e2e" in item.keywords or item.nodeid.startswith(slow):
            item.add_marker(pytest.mark.slow)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the long tests handed out first (tests/xdist_schedule.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.xdist_schedule import FilesAndUnits

    return FilesAndUnits(config, log)


@pytest.fixture
def kbx_cli(tmp_path):
    """Run a kbx module as a subprocess in the repo; returns (returncode, stdout, stderr)."""
    import subprocess

    def run(*args, env=None, timeout=900):
        full_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
        proc = subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=full_env, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip
        return proc.returncode, proc.stdout, proc.stderr

    return run


def ctrl_c_default() -> None:
    """`preexec_fn` for a child a test sends Ctrl-C: pytest-xdist's workers ignore SIGINT, children
    inherit that, and Python then installs no KeyboardInterrupt handler at all."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c_once(args: list[str], written, wait_s: float = 300.0) -> tuple[int, float, str]:
    """Start `python -m ARGS` in the repo, send it Ctrl-C once `written()` is true (its first record is on
    disk), and return (exit status, seconds from Ctrl-C to exit, stderr)."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO,
                            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default)  # fmt: skip
    try:
        deadline = time.monotonic() + wait_s
        while not written() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert written(), "the first record was never written"
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        err = proc.communicate(timeout=30)[1]
        return proc.returncode, time.monotonic() - sent, err
    finally:
        proc.kill()
