"""The environment candidate workers get: the driver's, minus anything secret.

Secrets are removed by name (any variable whose name holds one of SECRET_MARKERS) and by
provider (LLM and cloud credential prefixes), so an API key in the driver never reaches
generated code. `redact` scrubs their values from any text that comes back.
"""

from __future__ import annotations

import os
import re

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
PROVIDER_PREFIXES = (
    "OPENAI_", "ANTHROPIC_", "AZURE_", "GEMINI_", "GOOGLE_", "VERTEX", "MISTRAL_", "COHERE_", "GROQ_",
    "DEEPSEEK_", "TOGETHER", "FIREWORKS_", "HF_", "HUGGING", "OPENROUTER_", "LITELLM_", "AWS_",
    "MLFLOW_TRACKING_", "DATABRICKS_", "REPLICATE_", "PERPLEXITY", "XAI_", "VLLM_API",
)  # fmt: skip
MIN_REDACT_LEN = 6  # shorter values (e.g. "1", "true") would redact ordinary text
REDACTED = "[redacted]"


PR_SET_DUMPABLE = 4  # prctl option (linux/prctl.h)


def protect_process() -> None:
    """Make this process non-dumpable, so workers without CAP_SYS_PTRACE (see
    kbx.sandbox.child.drop_privileges) cannot read its /proc/<pid>/environ or attach to it.
    Linux only; elsewhere a no-op."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


CAP_VERSION_3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3
PR_CAPBSET_DROP = 24
LAST_CAP = 63


def drop_capabilities() -> None:
    """Clear this process's capability sets (root keeps its uid but loses CAP_SYS_PTRACE,
    CAP_DAC_OVERRIDE, ...). Best effort: a kernel or container that refuses leaves them."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    libc.capset(ctypes.byref(Header(CAP_VERSION_3, 0)), (Data * 2)())


def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(m in upper for m in SECRET_MARKERS) or upper.startswith(PROVIDER_PREFIXES)


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in (os.environ if base is None else base).items() if not is_secret(k)}
    env.update(extra or {})
    return env


def secret_values(base: dict[str, str] | None = None) -> list[str]:
    env = os.environ if base is None else base
    return sorted({v for k, v in env.items() if is_secret(k) and len(v) >= MIN_REDACT_LEN}, key=len, reverse=True)


def redact(text: str, extra: tuple[str, ...] = ()) -> str:
    """Replace every secret value of the environment, every value in `extra` (e.g. a configured API
    key) and anything shaped like a provider key with REDACTED."""
    for value in sorted({*secret_values(), *(e for e in extra if e)}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return re.sub(r"(?i)\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}", REDACTED, text)
