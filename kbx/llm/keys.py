"""Where an API key may come from: the provider's environment variable (best), `llm.api_key` in a
config file, or `llm.api_key_file`. Never the command line: every process of the same user can
read a command line (/proc/<pid>/cmdline), and Hydra records command-line overrides on disk."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kbx.core.errors import ConfigError

COMMAND_LINE_KEY = "llm.api_key"


def refuse_key_on_command_line(overrides: Iterable[str]) -> None:
    """Raise ConfigError if an override (`llm.api_key=...`, `+llm.api_key=...`) sets the key."""
    for override in overrides:
        key, sep, value = override.lstrip("+~").partition("=")
        if sep and key.strip() == COMMAND_LINE_KEY and value.strip():
            raise ConfigError(
                f"{COMMAND_LINE_KEY} on the command line is readable by every process of this user and is recorded "
                "by Hydra: export the provider's variable (e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY) or put the key in "
                "a file and pass llm.api_key_file=PATH"
            )  # fmt: skip


def api_key(llm: dict) -> str:
    """The key from `llm.api_key`, else from the file `llm.api_key_file`, else "" (the provider's
    environment variable, read by litellm)."""
    if llm.get("api_key"):
        return str(llm["api_key"])
    path = str(llm.get("api_key_file") or "")
    if not path:
        return ""
    try:
        key = Path(path).expanduser().read_text().strip()
    except OSError as exc:
        raise ConfigError(f"llm.api_key_file: cannot read {path}: {exc.strerror}") from exc
    if not key:
        raise ConfigError(f"llm.api_key_file: {path} is empty")
    return key
