"""Hydra's submitit launchers. Slurm itself is not here: the Slurm launcher is checked as Hydra
composes and builds it (partition, constraint, GPUs and time limit from the hardware profile); the
local one runs a real two-job multirun, its jobs as concurrent subprocesses sharing one sqlite store."""

from __future__ import annotations

import pytest
import yaml

pytestmark = pytest.mark.e2e


def launcher_config(kbx_cli, *overrides: str) -> dict:
    """hydra.launcher as Hydra resolves it for a job: against the whole config, hardware included
    (`--cfg hydra` alone prints it detached from the job config, where ${hardware...} cannot resolve)."""
    code, out, err = kbx_cli("kbx.run", "hydra/launcher=slurm", *overrides, "--cfg", "all", "--resolve")
    assert code == 0, err[-3000:]
    return yaml.safe_load(out)["hydra"]["launcher"]


def test_slurm_launcher_takes_partition_and_constraint_from_the_hardware_profile(kbx_cli):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="in the [cluster] extra")
    from hydra.utils import instantiate

    h100 = launcher_config(kbx_cli, "hardware=h100", "hardware.slurm.partition=gpu", "hardware.slurm.constraint=h100",
                           "hardware.slurm.mem_gb=64")  # fmt: skip
    assert h100["_target_"].endswith("SlurmLauncher")
    assert (h100["partition"], h100["constraint"], h100["gpus_per_node"], h100["mem_gb"], h100["timeout_min"]) == (
        "gpu", "h100", 1, 64, 240)  # fmt: skip
    cpu = launcher_config(kbx_cli, "hardware=cpu", "hydra.launcher.account=lab")  # the plugin's own keys still work
    assert (cpu["partition"], cpu["constraint"], cpu["gpus_per_node"], cpu["account"]) == (None, None, None, "lab")
    launcher = instantiate(h100)  # what Hydra does with hydra.launcher at the start of a multirun
    assert type(launcher).__name__ == "SlurmLauncher" and launcher.params["partition"] == "gpu"


def test_submitit_local_multirun_runs_jobs_as_subprocesses(kbx_cli, tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="in the [cluster] extra")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    sweep = tmp_path / "multi"
    # the submitit folder interpolates the job config, as hydra/launcher=slurm does: resolved at launch
    code, out, err = kbx_cli("kbx.run", "-m", "hydra/launcher=submitit_local", "method=reference", "hardware=cpu",
                             "task=Activation/relu,Activation/selu", "eval.workers=1", "experiment=submitit",
                             f"tracking_uri={uri}", f"hydra.sweep.dir={sweep}",
                             "hydra.launcher.submitit_folder=${hydra.sweep.dir}/.submitit-${hardware.name}/%j")  # fmt: skip
    assert code == 0, (out + err)[-3000:]
    logs = sorted((sweep / ".submitit-cpu").glob("*/*_0_log.out"))
    assert len(logs) == 2 and all("Job completed successfully" in p.read_text() for p in logs)
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["submitit", "submitit-tasks"])
    jobs = runs[runs["tags.kbx.role"] == "job"]
    assert len(jobs) == 2 and (jobs["status"] == "FINISHED").all() and (jobs["metrics.suite/correct_rate"] == 1.0).all()
    assert sorted(runs[runs["tags.kbx.role"] == "task"]["params.task"]) == ["Activation/relu", "Activation/selu"]
    assert len(set(jobs["tags.kbx.driver"])) == 2  # a process per job (the basic launcher runs both in one)


def test_the_launcher_is_resolved_against_the_overrides_that_are_not_swept(kbx_cli, tmp_path):
    """Why docs/SCALING.md says "one hardware profile per command": a swept hardware= does not reach the
    launcher, which gets the default profile's settings. (The jobs stop at an unknown task, which only a
    job can check: the multirun preflight passes them.)"""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="in the [cluster] extra")
    code, out, err = kbx_cli("kbx.run", "-m", "hydra/launcher=submitit_local", "hardware=cpu,h100",
                             "task=Nope/thing", f"hydra.sweep.dir={tmp_path}",
                             "hydra.launcher.submitit_folder=${hydra.sweep.dir}/.submitit-${hardware.name}/%j")  # fmt: skip
    assert code != 0 and "unknown task(s) Nope/thing" in out + err
    assert [p.name for p in tmp_path.glob(".submitit-*")] == [".submitit-auto"]  # conf/config.yaml's default
