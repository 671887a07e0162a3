"""Hardware profiles (peak numbers for roofline figures) and detection of the GPU at hand.

A profile names a GPU model and its peaks; `resolve` checks it against what NVML reports, so
results are never labelled with a GPU that did not produce them (upstream compared against
stored timings of other GPUs). `auto` picks the profile matching the present GPU, or `cpu`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

PROFILES_DIR = Path(__file__).resolve().parents[2] / "conf" / "hardware"


class HardwareError(ValueError):
    """The requested hardware is not the hardware present (and was not forced)."""


@dataclasses.dataclass(frozen=True)
class Hardware:
    name: str  # profile name: cpu, h100, h200, ...
    kind: str  # "cpu" or "cuda"
    gpu_name: str = ""  # what NVML reports, e.g. "NVIDIA H100 80GB HBM3"
    nvml_match: str = ""  # substring of the NVML name that identifies this profile
    peak_bw_gbs: float = 0.0
    peak_fp32_tflops: float = 0.0
    peak_tf32_tflops: float = 0.0
    peak_bf16_tflops: float = 0.0
    l2_mb: float = 0.0
    gpu_index: int = 0
    gpus: tuple[int, ...] = ()  # several GPUs of this host for one run (kbx.driver.pool); () = gpu_index alone

    @property
    def device(self) -> str:
        return "cuda" if self.kind == "cuda" else "cpu"

    @property
    def indices(self) -> tuple[int, ...]:
        """The GPU indices evaluation runs on (gpu_index alone until `resolve` has expanded "all")."""
        return self.gpus if self.gpus and self.gpus != _ALL else (self.gpu_index,)


ALL_GPUS = "all"  # hardware.gpus: every GPU of this host of the same model as gpu_index's
_ALL = (-1,)  # ALL_GPUS until `resolve` knows the GPUs present


def from_config(cfg) -> Hardware:
    fields = {f.name for f in dataclasses.fields(Hardware)}
    values = {k: v for k, v in dict(cfg).items() if k in fields}
    gpus = values.get("gpus") or ()
    values["gpus"] = _ALL if gpus == ALL_GPUS else tuple(int(i) for i in gpus)
    return Hardware(**values)


def load_profiles() -> dict[str, Hardware]:
    """Every named profile in conf/hardware (all but `auto`)."""
    import yaml  # pyyaml, not omegaconf: the GPU worker machine has no Hydra stack

    return {p.stem: from_config(yaml.safe_load(p.read_text())) for p in sorted(PROFILES_DIR.glob("*.yaml"))
            if p.stem != "auto"}  # fmt: skip


def profile_for(gpu_name: str) -> Hardware | None:
    """The named profile whose `nvml_match` is in an NVML GPU name (as `auto` picks it); None for none."""
    for profile in load_profiles().values():
        if profile.nvml_match and profile.nvml_match.lower() in gpu_name.lower():
            return dataclasses.replace(profile, gpu_name=gpu_name)
    return None


def eval_defaults(hardware: Hardware) -> dict:
    """The evaluator's defaults (`eval_defaults` of conf/hardware/*.yaml) for the hardware judging: the
    CPU's where evaluation runs on the CPU (a forced GPU label without a GPU too), the profile's for a
    known GPU, and auto.yaml's for a GPU that has no profile."""
    import yaml

    name = "cpu" if hardware.device == "cpu" else hardware.name
    path = PROFILES_DIR / f"{name}.yaml"
    if name == "auto" or not path.is_file():
        path = PROFILES_DIR / "auto.yaml"
    return dict(yaml.safe_load(path.read_text()).get("eval_defaults") or {})


def detect_gpus() -> list[str]:
    """NVML names of the GPUs present; [] when NVML or a GPU is absent."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return []
    try:
        names = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else name)
        return names
    finally:
        pynvml.nvmlShutdown()


HYDRA_OPTIONS = ("hardware={}", "hardware=auto", "hardware.force=true")  # how kbx.run spells the choices


def resolve(requested: Hardware, profiles: dict[str, Hardware], force: bool = False, gpus: list[str] | None = None,
            options: tuple[str, str, str] = HYDRA_OPTIONS) -> Hardware:  # fmt: skip
    """The profile to run with, checked against the GPUs present. `options` spell the request, the
    automatic choice and the override in the caller's own syntax, for the error message.

    - `auto`: the profile whose `nvml_match` is in the present GPU's name; an unknown GPU runs
      under its NVML name with no peak figures; no GPU means `cpu`.
    - a named GPU profile: must match the GPU present unless `force` (then evaluation runs on
      whatever is present, labelled as requested).
    """
    gpus = detect_gpus() if gpus is None else gpus
    if requested.gpus == _ALL:
        requested = dataclasses.replace(requested, gpus=_same_model(requested.gpu_index, gpus))
    if requested.kind != "cpu" and len(requested.indices) > 1:
        _check_same_model(requested.indices, gpus)
        requested = dataclasses.replace(requested, gpu_index=requested.indices[0])
    present = gpus[requested.gpu_index] if len(gpus) > requested.gpu_index else ""
    if requested.name == "auto":
        if not present:
            return dataclasses.replace(profiles["cpu"])
        for profile in profiles.values():
            if profile.nvml_match and profile.nvml_match.lower() in present.lower():
                return dataclasses.replace(profile, gpu_name=present, gpu_index=requested.gpu_index, gpus=requested.gpus)
        return Hardware(name=_slug(present), kind="cuda", gpu_name=present, gpu_index=requested.gpu_index,
                        gpus=requested.gpus)
    if requested.kind == "cpu":
        return requested
    matches = bool(present) and requested.nvml_match.lower() in present.lower()
    if not matches and not force:
        found = f"the GPU present is {present!r}" if present else "no GPU is present"
        asked, auto, force_option = options
        raise HardwareError(f"{asked.format(requested.name)} was requested but {found}; use {auto}, or {force_option} "
                            "to label results as requested anyway")  # fmt: skip
    if not present:
        return dataclasses.replace(requested, kind="cpu", gpu_name="")  # forced label, evaluated on the CPU
    return dataclasses.replace(requested, gpu_name=present)


def _same_model(index: int, gpus: list[str]) -> tuple[int, ...]:
    """Every GPU present of the model at `index` (one run's results carry one GPU label); () when
    there is one or none, so `gpu_index` alone is used."""
    if index >= len(gpus):
        return ()
    same = tuple(i for i, name in enumerate(gpus) if name == gpus[index])
    return same if len(same) > 1 else ()


def _check_same_model(indices: tuple[int, ...], gpus: list[str]) -> None:
    """Every requested GPU exists and all are one model: one run's results carry one GPU label."""
    missing = [i for i in indices if i >= len(gpus)]
    if missing:
        raise HardwareError(f"hardware.gpus={list(indices)} asks for GPU {missing[0]}, but {len(gpus)} GPU(s) are present")
    models = {gpus[i] for i in indices}
    if len(models) > 1:
        raise HardwareError(f"hardware.gpus={list(indices)} mixes GPU models ({', '.join(sorted(models))}); "
                            "run each model separately")  # fmt: skip


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
