"""LLM access for generation methods: one litellm-backed client with record/replay and accounting.

litellm fetches a model price map over the network when imported unless told not to (and that
deadlocks an MLflow server; stack-facts.md §3, §6), so the switch is set before any import.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from kbx.llm.client import Call, LLMClient, LLMError, LLMSettings, redact_secret  # noqa: E402

__all__ = ["Call", "LLMClient", "LLMError", "LLMSettings", "redact_secret"]
