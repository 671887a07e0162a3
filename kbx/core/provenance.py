"""What judged a verdict: the versions every record carries (and a job's MLflow params and tags).

kbx's own commit (its checkout's HEAD, with DIRTY_SUFFIX when tracked files differ from it) or, for
an install without a checkout, the installed version; torch and triton; and on a GPU the NVIDIA
driver (NVML) and the CUDA runtime torch ships (`torch.version.cuda`), both "" on a CPU. torch's
version and CUDA runtime are read from its metadata and its generated version file: importing torch
costs the driver seconds, and nothing else there needs it.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import importlib.util
import os
import subprocess
from pathlib import Path

from kbx.core.telemetry import Telemetry

CHECKOUT = Path(__file__).resolve().parents[2]  # the folder holding kbx/, a git checkout or site-packages
GIT_TIMEOUT_S = 10.0
DIRTY_SUFFIX = "-dirty"
INSTALLED_PREFIX = "kbx "  # an installed version, not a commit: "kbx 0.1.0"
FIELDS = ("kbx_commit", "torch_version", "triton_version", "nvidia_driver_version", "cuda_runtime_version")


def collect(gpu_index: int | None) -> dict[str, str]:
    """The record fields (FIELDS) for evaluation on GPU `gpu_index` (NVML's numbering), or the CPU (None)."""
    on_gpu = gpu_index is not None
    return {"kbx_commit": kbx_commit(), "torch_version": _version("torch"), "triton_version": _version("triton"),
            "nvidia_driver_version": nvidia_driver(gpu_index) if on_gpu else "",
            "cuda_runtime_version": torch_cuda() if on_gpu else ""}  # fmt: skip


COMMIT_ENV = "KBX_COMMIT"  # names the code where a copied tree has stale or no git metadata (a GPU node)


def kbx_commit() -> str:
    """COMMIT_ENV where set; else HEAD of the checkout kbx runs from (DIRTY_SUFFIX with changes to
    tracked files); outside a checkout, or without git, the installed version (INSTALLED_PREFIX)."""
    return os.environ.get(COMMIT_ENV) or _checkout_commit()


@functools.lru_cache(maxsize=1)
def _checkout_commit() -> str:
    if (CHECKOUT / ".git").exists():
        git = ["git", "-C", str(CHECKOUT)]
        try:
            head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                                  timeout=GIT_TIMEOUT_S).stdout.strip()  # fmt: skip
            dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--"], capture_output=True,
                                   timeout=GIT_TIMEOUT_S).returncode == 1  # fmt: skip
            return head + (DIRTY_SUFFIX if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass  # no git here, or a checkout git refuses (another owner's): the version says what it can
    return INSTALLED_PREFIX + (_version("kbx") or _package_version())


def _package_version() -> str:
    import kbx

    return kbx.__version__


@functools.lru_cache(maxsize=8)
def _version(distribution: str) -> str:
    try:
        return md.version(distribution)
    except md.PackageNotFoundError:
        return ""


@functools.lru_cache(maxsize=8)
def nvidia_driver(gpu_index: int) -> str:
    return Telemetry(gpu_index).driver_version()


@functools.lru_cache(maxsize=1)
def torch_cuda() -> str:
    """`torch.version.cuda` without importing torch: the constant in torch's generated version.py
    ("" for a CPU build, or where torch is absent)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return ""
    try:
        return cuda_in((Path(spec.submodule_search_locations[0]) / "version.py").read_text())
    except OSError:
        return ""


def cuda_in(version_file: str) -> str:
    """The string constant `cuda` of torch's version.py ("" when it is None or absent)."""
    try:
        tree = ast.parse(version_file)
    except SyntaxError:
        return ""
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "cuda" for t in targets) and isinstance(value, ast.Constant):
            return value.value if isinstance(value.value, str) else ""
    return ""
