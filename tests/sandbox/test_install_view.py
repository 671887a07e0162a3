"""The sandbox's view follows where kbx really lives: an editable install of a checkout in a home
directory (hidden from candidates), run from another working directory, still gives every worker
the kbx it runs on, and only that (kbx.sandbox.answers, kbx.sandbox.namespaces)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHECKOUT_PARTS = ("kbx", "conf", "tasks", "pyproject.toml", "README.md")
HONEST_TASK = "Math/add"  # its expert is self-contained
BORROWING_TASK = "Reduce/argmax"  # its expert imports kbx.experts.argreduce
INSTALL_TIMEOUT_S = 300
EVALUATE_TIMEOUT_S = 600


def _venv_with_editable_kbx(home: Path) -> tuple[Path, dict]:
    """A copy of this checkout in `home`, installed editable (setuptools' editable finder: a meta path
    finder, no sys.path entry) into a fresh venv whose only other packages are this interpreter's
    (a .pth line adds its site-packages as a plain path, so its own install of kbx is not loaded)."""
    checkout = home / "src" / "kbx"
    for part in CHECKOUT_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, checkout / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            checkout.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, checkout / part)
    venv = home / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    Path(purelib, "kbx-test-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KBX_TASKS_DIR")}
    env["HOME"] = str(home)
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                           "--no-build-isolation", "--no-index", "-e", str(checkout)],
                          capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return python, env


def test_an_editable_install_in_a_hidden_home_judges_from_any_working_directory(tmp_path):
    home = tmp_path / "home"  # under /tmp and $HOME: both hidden from candidates
    python, env = _venv_with_editable_kbx(home)
    where = subprocess.run([python, "-c", "import kbx; print(kbx.__file__)"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, check=True).stdout.strip()  # fmt: skip
    assert where == str(home / "src" / "kbx" / "kbx" / "__init__.py")
    lines = [{"task": task, "predict": (REPO / "tasks" / task / "expert.py").read_text()}
             for task in (HONEST_TASK, BORROWING_TASK)]  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "predictions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = subprocess.run([python, "-m", "kbx.evaluate", "predictions.jsonl", "--hardware", "cpu", "--workers", "2",
                           "--json", "records.json"], capture_output=True, text=True, env=env, cwd=elsewhere,
                          timeout=EVALUATE_TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    honest, borrowing = json.loads((elsewhere / "records.json").read_text())
    assert honest["sandbox"] == "namespaces" and honest["status"] == "ok", honest["reason"]
    # No git checkout here: the installed version stands for kbx's commit (kbx.core.provenance).
    assert honest["kbx_commit"] == f"kbx {importlib.metadata.version('kbx')}"
    assert honest["nvidia_driver_version"] == honest["cuda_runtime_version"] == ""
    # The worker saw the kbx it runs on; a candidate saw none of the rest of it.
    assert borrowing["status"] == "borrowed_answer", borrowing["reason"]
    assert borrowing["reason"] == "imported kbx.experts.argreduce: kbx's own code, not the candidate's"
