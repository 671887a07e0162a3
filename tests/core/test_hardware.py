"""Hardware profiles and their check against the GPU present."""

from __future__ import annotations

import pytest

from kbx.core.hardware import Hardware, HardwareError, load_profiles, resolve

H100_NAME = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def test_profiles_have_peaks(profiles):
    assert {"cpu", "h100", "h200", "a100", "h800", "rtx4090", "rtx5090"} <= set(profiles)
    for name, p in profiles.items():
        if name != "cpu":
            assert p.kind == "cuda" and p.peak_bw_gbs > 0 and p.peak_bf16_tflops > 0 and p.l2_mb > 0 and p.nvml_match


def test_auto_detects_or_falls_back(profiles):
    auto = Hardware(name="auto", kind="auto")
    assert resolve(auto, profiles, gpus=[]).name == "cpu"
    found = resolve(auto, profiles, gpus=[H100_NAME])
    assert (found.name, found.gpu_name, found.device) == ("h100", H100_NAME, "cuda")
    unknown = resolve(auto, profiles, gpus=["NVIDIA Mystery 9000"])
    assert unknown.kind == "cuda" and unknown.peak_bw_gbs == 0


def test_named_gpu_must_be_present_unless_forced(profiles):
    with pytest.raises(HardwareError, match="hardware=h200 was requested but the GPU present is"):
        resolve(profiles["h200"], profiles, gpus=[H100_NAME])
    with pytest.raises(HardwareError, match="no GPU is present"):
        resolve(profiles["h100"], profiles, gpus=[])
    assert resolve(profiles["h200"], profiles, force=True, gpus=[H100_NAME]).name == "h200"
    assert resolve(profiles["h100"], profiles, force=True, gpus=[]).device == "cpu"
    assert resolve(profiles["h100"], profiles, gpus=[H100_NAME]).gpu_name == H100_NAME


def test_several_gpus_of_one_model(profiles):
    import dataclasses

    two = dataclasses.replace(profiles["h100"], gpus=(0, 1))
    found = resolve(two, profiles, gpus=[H100_NAME, H100_NAME])
    assert found.indices == (0, 1) and found.gpu_index == 0 and found.gpu_name == H100_NAME
    auto = resolve(Hardware(name="auto", kind="auto", gpus=(1, 0)), profiles, gpus=[H100_NAME, H100_NAME])
    assert (auto.name, auto.indices, auto.gpu_index) == ("h100", (1, 0), 1)
    with pytest.raises(HardwareError, match=r"asks for GPU 2, but 2 GPU\(s\) are present"):
        resolve(dataclasses.replace(two, gpus=(0, 2)), profiles, gpus=[H100_NAME, H100_NAME])
    with pytest.raises(HardwareError, match="mixes GPU models"):
        resolve(two, profiles, gpus=[H100_NAME, "NVIDIA H200"])
    assert profiles["h100"].indices == (0,)  # "all", not yet resolved against the GPUs present: gpu_index alone


def test_every_gpu_of_the_model_by_default(profiles):
    """hardware.gpus=all (the GPU profiles' default): every GPU of gpu_index's model, so kbx.run
    uses the whole host; another model's GPUs are left out, and one GPU is gpu_index alone."""
    h100 = profiles["h100"]
    two = resolve(h100, profiles, gpus=[H100_NAME, H100_NAME])
    assert two.indices == (0, 1)
    mixed = resolve(h100, profiles, gpus=[H100_NAME, "NVIDIA A100-SXM4-80GB", H100_NAME])
    assert mixed.indices == (0, 2)
    assert resolve(h100, profiles, gpus=[H100_NAME]).indices == (0,)
    assert resolve(Hardware(name="auto", kind="auto", gpus=h100.gpus), profiles, gpus=[H100_NAME] * 4).indices == (
        0, 1, 2, 3)  # fmt: skip
    assert resolve(h100, profiles, force=True, gpus=[]).indices == (0,)


# ----- the evaluator's defaults per hardware profile (conf/hardware/*.yaml, eval_defaults) ----------


def composed(*overrides: str):
    from kbx.sweeps.compose import compose

    return compose(list(overrides))


def test_composed_eval_workers_follow_the_profile_and_the_command_line_wins():
    assert composed("hardware=cpu").eval.workers == 2
    assert composed("hardware=h100").eval.workers == 8
    assert composed("hardware=h200").eval.workers == 8
    assert composed("hardware=h100", "eval.workers=3").eval.workers == 3
    assert composed("hardware=cpu", "eval.workers=5").eval.workers == 5


@pytest.mark.parametrize(
    ("gpus", "overrides", "workers"),
    [([H100_NAME], [], 8), ([], [], 2), (["NVIDIA Mystery 9000"], [], 8), ([H100_NAME], ["eval.workers=3"], 3),
     ([], ["eval.workers=5"], 5)],
)  # fmt: skip
def test_hardware_auto_takes_the_detected_profiles_defaults(profiles, gpus, overrides, workers):
    """hardware=auto composes auto.yaml's defaults; the GPU found (or none) decides, unless the
    command line named a value."""
    from kbx.core import hardware as hw
    from kbx.job.runner import apply_eval_defaults

    cfg = composed("hardware=auto", *overrides)
    apply_eval_defaults(cfg, resolve(hw.from_config(cfg.hardware), profiles, gpus=gpus))
    assert cfg.eval.workers == workers


def test_a_forced_gpu_label_without_a_gpu_judges_with_the_cpus_defaults(profiles):
    from kbx.core.hardware import eval_defaults

    assert eval_defaults(resolve(profiles["h100"], profiles, force=True, gpus=[])) == {"workers": 2}
    assert eval_defaults(resolve(profiles["h100"], profiles, gpus=[H100_NAME])) == {"workers": 8}
