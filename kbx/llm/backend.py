"""litellm, imported on first use, so that importing kbx never imports it."""

import logging
import os


def litellm():
    """litellm, with its network price-map fetch switched off first: that fetch stalls offline
    imports and deadlocks an MLflow server that imports kbx (docs/DEPENDENCIES.md)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as module

    module.suppress_debug_info = True  # no "Give Feedback" banners on errors
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):  # per-call INFO lines under Hydra's logging
        logging.getLogger(name).setLevel(logging.WARNING)
    return module
