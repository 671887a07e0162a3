"""The Optuna side of a sweep: storage, sampler, pruner, and the trial loop.

One trial = one kbx job = one MLflow parent run (tags kbx.study, kbx.trial). `n_trials` is the number
of finished (complete or pruned) trials the study should hold, so rerunning the same command after an
interruption finishes the rest, and several workers on one storage share the count. A trial stopped
by Ctrl-C/SIGTERM is marked FAIL and its parameters are queued again; one whose process died is
found by its missing heartbeat and queued again by the next worker.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import warnings
from pathlib import Path

from kbx.core.errors import USER_ERRORS, ConfigError
from kbx.sweeps.compose import compose
from kbx.sweeps.spec import METRICS, PRUNERS, SAMPLERS, Param, SweepSpec, override, redacted

log = logging.getLogger("kbx.sweep")
LLM_METRICS = {"llm_calls", "llm_errors", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd"}
OPTUNA_DB = "optuna.db"


class TrialError(Exception):
    """A trial that ran but cannot be scored (e.g. its objective metric was not measured); it is marked FAIL."""


@dataclasses.dataclass
class Outcome:
    study: str
    storage: str
    finished: int  # complete or pruned trials in the study
    running: int  # trials other workers are running at the end
    wanted: int  # n_trials
    started: int  # trials this invocation started
    failed: list[str]  # reasons of the trials that failed in this invocation


def default_storage(tracking_uri: str, root: Path) -> str:
    """sqlite next to the MLflow store: <dir of mlflow.db>/optuna.db, else <root>/mlruns/optuna.db."""
    from kbx.tracking.tracker import DEFAULT_STORE_DIR, default_tracking_uri

    uri = tracking_uri or default_tracking_uri(root)
    folder = Path(uri.removeprefix("sqlite:///")).parent if uri.startswith("sqlite:///") else root / DEFAULT_STORE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / OPTUNA_DB).resolve()}"


def redact_url(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def open_storage(url: str, heartbeat_s: int):
    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    engine = {"connect_args": {"timeout": 120}} if url.startswith("sqlite") else {}

    def storage():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # heartbeat options are marked experimental
            return RDBStorage(url, engine_kwargs=engine, heartbeat_interval=heartbeat_s, grace_period=2 * heartbeat_s,
                              failed_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=2))  # fmt: skip

    try:
        return retried(storage)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises many kinds for a bad URL
        raise ConfigError(f"storage {redact_url(url)}: {' '.join(str(exc).split())[:300]}") from None


def retried(make, tries: int = 4):
    """`make()`, tried again after a pause: workers starting together race to create the same
    database schema, MLflow experiment or study, and the loser of such a race succeeds on a retry."""
    import time

    for i in range(tries):
        try:
            return make()
        except Exception:  # noqa: BLE001 - re-raised on the last try
            if i == tries - 1:
                raise
            time.sleep(1.0 + i)


def build_sampler(spec: SweepSpec):
    import optuna

    kwargs = {k: v for k, v in spec.sampler.items() if k != "name"}
    name = spec.sampler["name"]  # one of SAMPLERS, and grid only over discrete parameters (the sweep's schema)
    if name == "grid":
        kwargs["search_space"] = {p.key: p.values() for p in spec.space}
    try:
        return getattr(optuna.samplers, SAMPLERS[name])(**kwargs)
    except (TypeError, ValueError, ImportError) as exc:
        raise ConfigError(f"sampler {name}: {exc}") from None


def build_pruner(spec: SweepSpec):
    import optuna

    kwargs = {k: v for k, v in spec.pruner.items() if k != "name"}
    name = spec.pruner["name"]  # one of PRUNERS (the sweep's schema)
    try:
        return getattr(optuna.pruners, PRUNERS[name])(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"pruner {name}: {exc}") from None


def check(spec: SweepSpec, root: Path):
    """Everything that can be wrong, before trial 1: every override and every value of the space
    composes, the first trial's job prepares (tasks, hardware, LLM endpoint), sampler and pruner build.
    Returns the base config (the trials' common part)."""
    from kbx.job.runner import Job

    base = compose(list(spec.overrides))
    for p in spec.space:
        condition = {key: values[0] for key, values in p.when}
        for value in _probe_values(p):
            try:
                compose(spec.trial_overrides({**condition, p.key: value}))
            except ConfigError as exc:
                raise ConfigError(f"{spec.path}: space: {exc}") from None
    first: dict = {}
    for p in spec.space:
        if p.active(first):
            first[p.key] = _probe_values(p)[0]
    job = Job.prepare(compose(spec.trial_overrides(first)), root)
    if job.llm is None:
        needs = [o.metric for o in spec.objectives if o.metric in LLM_METRICS]
        if needs:
            raise ConfigError(f"objective {needs[0]} needs an LLM method (method={base.method.name} makes no calls)")
    build_sampler(spec), build_pruner(spec)
    return base


def _probe_values(p: Param) -> list:
    return p.values() if p.type == "categorical" else [p.low, p.high]


def run(spec: SweepSpec, root: Path) -> Outcome:
    import optuna
    from optuna.storages import fail_stale_trials
    from optuna.trial import TrialState

    from kbx.sweeps.report import log_summary
    from kbx.tracking.tracker import Tracker

    base = check(spec, root)
    url = spec.storage or default_storage(str(base.tracking_uri or ""), root)
    storage = open_storage(url, spec.heartbeat_s)
    directions = [o.direction for o in spec.objectives]
    study = retried(lambda: optuna.create_study(storage=storage, study_name=spec.study, directions=directions,
                                                load_if_exists=True, sampler=build_sampler(spec),
                                                pruner=build_pruner(spec)))  # fmt: skip
    found = [d.name.lower() for d in study.directions]
    if found != directions:
        raise ConfigError(f"study {spec.study!r} in {redact_url(url)} optimises {found}, not {directions}; "
                          f"use another study= name")  # fmt: skip
    if "kbx.sweep" not in study.user_attrs:
        study.set_user_attr("kbx.sweep", spec.summary())
    tracker = retried(lambda: Tracker(str(base.tracking_uri or ""), str(base.experiment), root,
                                      secrets=spec.secrets()))  # fmt: skip
    objective = Objective(spec, root, study, tracker, redact_url(url))
    log.info("study %s in %s: %d trial(s) wanted", spec.study, redact_url(url), spec.n_trials)

    def finished(states=(TrialState.COMPLETE, TrialState.PRUNED)) -> int:
        return len(study.get_trials(deepcopy=False, states=states))

    started, failed = 0, []
    interrupted = False
    try:
        while started < spec.n_trials:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fail_stale_trials(study)  # trials of a worker that died: FAIL, and queued again
            close_dead_runs(study, tracker, spec.study, redact_url(url))
            if finished((TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)) >= spec.n_trials:
                break
            started += 1
            study.optimize(objective, n_trials=1, catch=(TrialError, *USER_ERRORS))
            last = next((t for t in study.get_trials(deepcopy=False) if t.number == objective.last_number), None)
            if last is not None and last.state == TrialState.FAIL:
                failed.append(f"trial {last.number}: {last.user_attrs.get('kbx.error', 'failed')}")
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if not interrupted and finished() > 0:
            log_summary(study, spec, tracker, redact_url(url))
    return Outcome(spec.study, redact_url(url), finished(), finished((TrialState.RUNNING,)), spec.n_trials, started,
                   failed)


def close_dead_runs(study, tracker, name: str, storage: str) -> None:
    """MLflow runs of trials whose worker died (the trial is FAIL, the run still RUNNING): mark them KILLED."""
    from optuna.trial import TrialState

    runs = tracker.client.search_runs([tracker.experiment_id], max_results=1000, filter_string=(
        f"attributes.status = 'RUNNING' and tags.`kbx.study` = '{_quote(name)}' and "
        f"tags.`kbx.optuna_storage` = '{_quote(storage)}'"))  # fmt: skip
    if not runs:
        return
    failed = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    for run in runs:
        if run.data.tags.get("kbx.role") == "job" and int(run.data.tags.get("kbx.trial", -1)) in failed:
            tracker.client.set_tag(run.info.run_id, "kbx.trial_state", "killed")
            tracker.client.set_terminated(run.info.run_id, "KILLED")


def _quote(text: str) -> str:
    return text.replace("'", "\\'")


class Objective:
    """One trial: suggest, compose, prepare, run (pruning on the running correct rate), score."""

    def __init__(self, spec: SweepSpec, root: Path, study, tracker, storage: str) -> None:
        self.spec, self.root, self.study, self.tracker, self.storage = spec, root, study, tracker, storage
        self.prune = spec.pruner["name"] not in ("none", "nop")
        self.last_number = -1

    def __call__(self, trial) -> float | list[float]:
        try:
            return self._run(trial)
        except (TrialError, *USER_ERRORS) as exc:
            trial.set_user_attr("kbx.error", str(exc))
            raise
        except KeyboardInterrupt:  # Ctrl-C / SIGTERM: this trial becomes FAIL; a copy is queued (WAITING)
            from optuna.storages import RetryHeartbeatStaleTrialCallback

            frozen = next(t for t in self.study.get_trials(deepcopy=False) if t.number == trial.number)
            RetryHeartbeatStaleTrialCallback(max_retry=2)(self.study, frozen)  # as for a dead worker's trial
            raise
        finally:
            self.last_number = trial.number

    def _run(self, trial) -> float | list[float]:
        import optuna

        from kbx.job.runner import Job

        params: dict = {}
        for p in self.spec.space:
            if p.active(params):
                params[p.key] = suggest(trial, p)
        overrides = self.spec.trial_overrides(params)
        trial.set_user_attr("kbx.overrides", redacted(overrides))
        job = Job.prepare(compose(overrides), self.root)
        pruned: list[tuple[int, float]] = []

        def on_round_done(k: int, correct_rate: float) -> bool:
            if not self.prune:
                return False
            trial.report(correct_rate, k)
            if trial.should_prune():
                pruned.append((k, correct_rate))
                return True
            return False

        tags = {"kbx.study": self.spec.study, "kbx.trial": str(trial.number), "kbx.sweep": self.spec.name,
                "kbx.optuna_storage": self.storage,
                **{f"kbx.param.{k}": override(k, v).split("=", 1)[1] for k, v in params.items()}}  # fmt: skip
        state = "failed"
        try:
            summary = job.run(tags=tags, on_round_done=on_round_done)
            trial.set_user_attr("kbx.summary", {k: v for k, v in summary.items() if _finite(v)})
            if pruned:
                state = "pruned"
                raise optuna.TrialPruned(f"correct rate {pruned[0][1]:.3f} after round {pruned[0][0]}")
            values = [metric(summary, o.metric) for o in self.spec.objectives]
            state = "complete"
            return values[0] if len(values) == 1 else values
        except KeyboardInterrupt:
            state = "interrupted"
            raise
        finally:
            if job.run_id:
                trial.set_user_attr("mlflow_run_id", job.run_id)
                self.tracker.client.set_tag(job.run_id, "kbx.trial_state", state)


def suggest(trial, p: Param):
    if p.type == "int":
        return trial.suggest_int(p.key, int(p.low), int(p.high), step=int(p.step or 1), log=p.log)
    if p.type == "float":
        return trial.suggest_float(p.key, float(p.low), float(p.high), step=p.step, log=p.log)
    return trial.suggest_categorical(p.key, list(p.choices))


def metric(summary: dict, name: str) -> float:
    assert name in METRICS
    if name == "total_tokens" and "prompt_tokens" in summary:
        value = summary["prompt_tokens"] + summary.get("completion_tokens", 0.0)
    else:
        value = summary.get(name, math.nan)
    if not _finite(value):
        raise TrialError(f"objective {name} was not measured in this trial (e.g. no timing on a CPU, "
                         f"no price for the model)")  # fmt: skip
    return float(value)


def _finite(v) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)
