"""Every record says what judged it: kbx's commit, torch, triton, and on a GPU the NVIDIA driver and
the CUDA runtime (kbx.core.provenance); the job's MLflow params and tags carry them too
(tests/job/test_run_e2e.py reads them back)."""

from __future__ import annotations

import importlib.metadata as md
import subprocess

import pytest

from kbx.core import provenance


def test_on_a_cpu_the_gpu_versions_are_empty_and_the_libraries_are_named():
    found = provenance.collect(None)
    assert set(found) == set(provenance.FIELDS)
    assert found["torch_version"] == md.version("torch") and found["triton_version"] == md.version("triton")
    assert found["nvidia_driver_version"] == found["cuda_runtime_version"] == ""


def test_kbx_commit_is_the_checkouts_head_or_the_installed_version(monkeypatch, tmp_path):
    monkeypatch.delenv(provenance.COMMIT_ENV, raising=False)
    head = subprocess.run(["git", "-C", str(provenance.CHECKOUT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    commit = provenance.kbx_commit()
    if head:  # a git checkout (CI's fresh clone, a worktree)
        assert commit.removesuffix(provenance.DIRTY_SUFFIX) == head
    provenance._checkout_commit.cache_clear()
    monkeypatch.setattr(provenance, "CHECKOUT", tmp_path)  # kbx installed from a wheel: no checkout around it
    try:
        assert provenance.kbx_commit() == f"kbx {md.version('kbx')}"
    finally:
        provenance._checkout_commit.cache_clear()


def test_the_cuda_runtime_is_read_from_torchs_version_file_without_importing_torch():
    assert provenance.cuda_in("__version__ = '2.13.0+cu128'\ncuda: Optional[str] = '12.8'\nhip = None\n") == "12.8"
    assert provenance.cuda_in("__version__ = '2.13.0'\ncuda = '12.6'\n") == "12.6"
    assert provenance.cuda_in("__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n") == ""
    assert provenance.cuda_in("not python (") == ""


@pytest.mark.gpu
def test_on_a_gpu_the_driver_and_the_cuda_runtime_are_named():
    import pynvml
    import torch

    found = provenance.collect(0)
    pynvml.nvmlInit()
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
    finally:
        pynvml.nvmlShutdown()
    assert found["nvidia_driver_version"] == (driver.decode() if isinstance(driver, bytes) else driver) != ""
    assert found["cuda_runtime_version"] == torch.version.cuda != ""


def test_kbx_commit_names_the_code_where_the_copied_tree_cannot(monkeypatch):
    """A tree copied onto a GPU machine carries stale git metadata: KBX_COMMIT wins, in records and summaries."""
    monkeypatch.setenv(provenance.COMMIT_ENV, "0123abc")
    assert provenance.kbx_commit() == "0123abc" == provenance.collect(None)["kbx_commit"]
