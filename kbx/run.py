"""`python -m kbx.run`: the Hydra entry point. See conf/config.yaml for groups and keys."""

from __future__ import annotations

import itertools
import logging
import sys
from pathlib import Path
from typing import NoReturn

import hydra
from omegaconf import DictConfig


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


def preflight(argv: list[str]) -> str:
    """Compose the job (with -m, every job of the sweep) and check it against the schema before Hydra
    starts it; with -m also every other preflight check, so no job starts before all are known good.
    Returns the first problem as one line ("" if none). Hydra composes with the keys forced
    (kbx.sweeps.compose.keys_forced), so a misspelt key is the schema's error, which names the
    nearest key, and never Hydra's. What Hydra itself cannot compose (an unknown group option, bad
    syntax) is left to Hydra, whose errors list the valid options."""
    # Hydra's own command-line parser: Hydra has no public one, and a copy here would drift from the
    # options (and which of them take a value) that Hydra accepts.
    from hydra._internal.utils import get_args_parser

    from kbx.core.errors import USER_ERRORS, ConfigError
    from kbx.job import preflight as checks
    from kbx.job import schema
    from kbx.sweeps.compose import compose_unchecked

    try:
        args = get_args_parser().parse_args(argv)
    except SystemExit:
        return ""
    if any((args.config_dir, args.config_name, args.config_path, args.help, args.hydra_help, args.info, args.cfg,
            args.shell_completion, args.experimental_rerun)):  # fmt: skip
        return ""
    try:
        jobs = _jobs(args.overrides) if args.multirun else [list(args.overrides)]
        composed = [(job, compose_unchecked([o for o in job if not _is_hydra(o)])) for job in jobs]
    except ConfigError:
        return ""
    uris = set()
    for i, (job, cfg) in enumerate(composed):
        try:
            schema.check(cfg)
            if args.multirun:
                checks.check_config(cfg, Path.cwd())
                uri = str(cfg.get("tracking_uri") or "")
                if uri not in uris:
                    uris.add(uri)
                    checks.check_tracking(uri)
        except USER_ERRORS as exc:
            if not args.multirun:
                return str(exc)
            shown = " ".join(o.replace("\\", "") for o in job if not _is_hydra(o)) or "(defaults)"
            return f"job {i} of {len(composed)} ({shown}): {exc}"
    return ""


def _jobs(overrides: list[str]) -> list[list[str]]:
    """The overrides of each job of a -m sweep, as Hydra's basic sweeper expands them (through Hydra's
    public Override API): the product of every choice list and range, in the order given. An interval
    sweep, which the basic sweeper refuses (it lists no values), is a ConfigError, as bad syntax is."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from kbx.core.errors import ConfigError

    try:
        choices = {}
        for o in OverridesParser.create().parse_overrides(overrides):
            key = o.get_key_element()
            if not o.is_sweep_override():
                choices[key] = [f"{key}={o.get_value_element_as_str()}"]
            elif o.is_discrete_sweep():
                choices[key] = [f"{key}={value}" for value in o.sweep_string_iterator()]
            else:
                raise ConfigError(f"kbx.run -m expands choice lists only, not {o.value_type.name} ({key})")
    except HydraException as exc:
        raise ConfigError(str(exc)) from None
    return [list(job) for job in itertools.product(*choices.values())]


def _is_hydra(override: str) -> bool:
    return override.lstrip("+~").startswith("hydra")


def cli() -> None:
    problem = preflight(sys.argv[1:])
    if problem:
        from kbx.core.errors import EXIT_USER_ERROR

        print(f"kbx: error: {problem}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    main()


if __name__ == "__main__":
    cli()
