"""kbx.run configurations through Hydra's compose API: a trial's config is exactly what
`python -m kbx.run <the same overrides>` composes (same conf/ directory, same version_base),
checked against the configuration schema (kbx/job/schema.py)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from kbx.core.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def compose(overrides: list[str]) -> DictConfig:
    """The composed config, checked: an unknown key, a wrong type or value is the schema's one-line
    ConfigError; an unknown group option or bad syntax is Hydra's, on one line."""
    from kbx.job import schema

    cfg = compose_unchecked(overrides)
    schema.check(cfg)
    return cfg


def compose_unchecked(overrides: list[str]) -> DictConfig:
    """The composed config before the schema's check; only Hydra's own errors (a group option that does
    not exist, bad syntax) are raised, as one-line ConfigErrors."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        forced = keys_forced(overrides)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="kbx_sweep"):
            return hydra_compose(config_name="config", overrides=forced)
    except (HydraException, OmegaConfBaseException) as exc:
        text = str(exc).split("Config search path")[0]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        raise ConfigError(" ".join(lines)) from None


def keys_forced(overrides: list[str]) -> list[str]:
    """Each `key=value` that sets a key becomes `++key=value`, which Hydra applies the same way to a key
    the config has and adds where it has none: a misspelt key then reaches the schema, which names the
    nearest known one, where Hydra would refuse it with a message of its own ("Could not override").
    Group choices (method=x, hydra/launcher=y), Hydra's own keys, +, ++ and ~ stay as given."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import OverrideType

    parser = OverridesParser.create()
    out = []
    for text in overrides:
        parsed = parser.parse_override(text)
        key = parsed.key_or_group
        is_key = parsed.type is OverrideType.CHANGE and parsed.package is None and "/" not in key
        if is_key and key.split(".")[0] != "hydra" and not (CONF_DIR / key).is_dir():
            text = "++" + text
        out.append(text)
    return out
