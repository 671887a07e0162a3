"""`python -m kbx.run`: the Hydra entry point. See conf/config.yaml for groups and keys."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

# litellm fetches a price map over the network when imported unless told not to (stack-facts.md).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from kbx.errors import EXIT_USER_ERROR, USER_ERRORS
    from kbx.job import Job
    from kbx.llm.keys import refuse_key_on_command_line

    try:
        refuse_key_on_command_line(HydraConfig.get().overrides.task)
        Job.prepare(cfg, Path.cwd()).run()
    except USER_ERRORS as exc:
        logging.getLogger("kbx").error("%s", exc)
        print(f"kbx: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)


if __name__ == "__main__":
    main()
