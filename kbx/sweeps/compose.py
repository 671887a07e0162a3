"""kbx.run configurations through Hydra's compose API: a trial's config is exactly what
`python -m kbx.run <the same overrides>` composes (same conf/ directory, same version_base)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from kbx.core.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def compose(overrides: list[str]) -> DictConfig:
    """The composed config; an unknown key, group option or bad syntax is a one-line ConfigError."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="kbx_sweep"):
            return hydra_compose(config_name="config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        text = str(exc).split("Config search path")[0]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        raise ConfigError(" ".join(lines)) from None
