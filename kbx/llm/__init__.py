"""LLM access for generation methods: one litellm-backed client with record/replay and accounting.

litellm itself is imported lazily, on the first call (see kbx.llm.backend.litellm).
"""

from kbx.llm.client import Call, LLMClient, LLMError, LLMSettings

__all__ = ["Call", "LLMClient", "LLMError", "LLMSettings"]
