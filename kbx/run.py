"""`python -m kbx.run`: the Hydra entry point. See conf/config.yaml for groups and keys."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

import hydra
from omegaconf import DictConfig

# litellm fetches a price map over the network when imported unless told not to (stack-facts.md).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from kbx.core.errors import USER_ERRORS
    from kbx.core.interrupt import exit_interrupted
    from kbx.job.runner import Interrupted, Job
    from kbx.llm.keys import refuse_key_on_command_line

    try:
        refuse_key_on_command_line(HydraConfig.get().overrides.task)
        job = Job.prepare(cfg, Path.cwd())
    except USER_ERRORS as exc:
        user_error(exc)
    except KeyboardInterrupt:  # in the checks (the LLM preflight may wait): nothing was started or recorded
        exit_interrupted("kbx: interrupted before any task started; nothing was recorded")
    try:
        job.run()
    except USER_ERRORS as exc:
        user_error(exc)
    except Interrupted as exc:
        logging.shutdown()
        exit_interrupted(f"kbx: interrupted: {exc}")  # the evaluator is closed already, the run marked KILLED


def user_error(exc: Exception) -> NoReturn:
    """One line on the console (Hydra's console handler would repeat a logged line: it goes to the job's log file)."""
    from kbx.core.errors import EXIT_USER_ERROR

    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(logging.makeLogRecord({"name": "kbx", "levelno": logging.ERROR, "levelname": "ERROR",
                                                  "msg": str(exc)}))  # fmt: skip
    print(f"kbx: error: {exc}", file=sys.stderr)
    sys.exit(EXIT_USER_ERROR)


def preflight_multirun(argv: list[str]) -> str:
    """With -m, compose every job of the sweep and check each before the first starts; returns the
    first problem as one line ("" if none). A sweep Hydra itself cannot compose is left to Hydra,
    whose errors list the valid options."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from kbx.core.errors import USER_ERRORS, ConfigError
    from kbx.job import preflight
    from kbx.sweeps.compose import compose

    try:
        args = get_args_parser().parse_args(argv)
    except SystemExit:
        return ""
    if not args.multirun or args.config_dir or args.config_name or args.help or args.hydra_help:
        return ""
    try:
        sweep = OverridesParser.create().parse_overrides(args.overrides)
        jobs = [job for batch in BasicSweeper.split_arguments(sweep, None) for job in batch]
        composed = [(job, compose([o for o in job if not o.lstrip("+~").startswith("hydra")])) for job in jobs]
    except (HydraException, ConfigError):
        return ""
    uris = set()
    for i, (job, cfg) in enumerate(composed):
        try:
            preflight.check_config(cfg, Path.cwd())
            uri = str(cfg.get("tracking_uri") or "")
            if uri not in uris:
                uris.add(uri)
                preflight.check_tracking(uri)
        except USER_ERRORS as exc:
            shown = " ".join(o.replace("\\", "") for o in job if not o.startswith("hydra")) or "(defaults)"
            return f"job {i} of {len(composed)} ({shown}): {exc}"
    return ""


def cli() -> None:
    problem = preflight_multirun(sys.argv[1:])
    if problem:
        from kbx.core.errors import EXIT_USER_ERROR

        print(f"kbx: error: {problem}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    main()


if __name__ == "__main__":
    cli()
