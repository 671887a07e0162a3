"""The sweep file (sweeps/*.yaml) and the command line, checked against their schema (SweepFile,
SweepCommandLine: one line per problem, kbx.core.schema) and parsed into a `SweepSpec`.

    overrides: [method=iterative, task=Activation/gelu]   # kbx.run overrides for every trial
    space:                                                # searched kbx.run keys (or config groups)
      iteration.rounds: {type: int, low: 1, high: 3}
      llm.temperature: {type: float, low: 0.0, high: 1.0}
      prompt: {type: categorical, choices: [base, math]}  # a plain list is short for this
      method.n: {type: int, low: 2, high: 6, when: {method: best_of_n}}   # searched only for best_of_n
    objectives:
      - {metric: correct_rate, direction: maximize}
    sampler: {name: tpe, seed: 0}                         # + keyword arguments of the Optuna sampler
    pruner: {name: median, n_warmup_steps: 1}             # or none
    n_trials: 12                                          # trials the study should have (done or pruned)
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

from kbx.core.errors import ConfigError
from kbx.core.schema import Schema, Text, rule, validate

SWEEP_KEYS = ("n_trials", "storage", "study")  # command-line keys that belong to the sweep, not to kbx.run
# What a trial can optimise: Job.run's summary, plus total_tokens (prompt + completion).
METRICS = ("correct_rate", "compile_rate", "fast_1", "geomean_speedup", "n_timed", "llm_calls", "llm_errors",
           "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")  # fmt: skip
DIRECTIONS = ("maximize", "minimize")
# sampler.name / pruner.name -> the Optuna class (kbx.sweeps.study builds it with the other keys)
SAMPLERS = {"tpe": "TPESampler", "random": "RandomSampler", "grid": "GridSampler", "nsgaii": "NSGAIISampler",
            "nsgaiii": "NSGAIIISampler", "qmc": "QMCSampler", "gp": "GPSampler", "cmaes": "CmaEsSampler",
            "bruteforce": "BruteForceSampler"}  # fmt: skip
PRUNERS = {"none": "NopPruner", "nop": "NopPruner", "median": "MedianPruner", "percentile": "PercentilePruner",
           "threshold": "ThresholdPruner", "successive_halving": "SuccessiveHalvingPruner",
           "hyperband": "HyperbandPruner"}  # fmt: skip
_PLAIN = re.compile(r"^[\w./:-]+$")
_MISSING = object()


@dataclasses.dataclass(frozen=True)
class Param:
    key: str
    type: str  # int | float | categorical
    low: float = 0
    high: float = 0
    step: float | None = None
    log: bool = False
    choices: tuple = ()
    when: tuple = ()  # ((key, (values...)), ...): searched only when those earlier parameters have these values

    def active(self, params: dict) -> bool:
        return all(params.get(key, _MISSING) in values for key, values in self.when)

    def values(self) -> list:
        """Every value of a discrete parameter (for validation and the grid sampler)."""
        if self.type == "categorical":
            return list(self.choices)
        if self.type == "int":
            return list(range(int(self.low), int(self.high) + 1, int(self.step or 1)))
        return [self.low, self.high]


@dataclasses.dataclass(frozen=True)
class Objective:
    metric: str
    direction: str


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    path: Path
    overrides: tuple[str, ...]  # the file's, then the command line's (a key given twice: the command line wins)
    space: tuple[Param, ...]
    objectives: tuple[Objective, ...]
    sampler: dict
    pruner: dict
    n_trials: int
    study: str
    storage: str  # "" until resolved next to the MLflow store
    heartbeat_s: int

    @property
    def name(self) -> str:
        return self.path.stem

    def trial_overrides(self, params: dict) -> list[str]:
        """The file's and command line's overrides, the trial's parameters, and (unless `resume` is given)
        `++resume=false`: a trial is always a new MLflow run, never the continuation of an earlier one."""
        fresh = [] if any(override_key(o) == "resume" for o in self.overrides) else ["++resume=false"]
        return [*self.overrides, *(override(k, v) for k, v in params.items()), *fresh]

    def secrets(self) -> tuple[str, ...]:
        """Values of secret keys (llm.api_key) given as overrides: never stored in Optuna or MLflow."""
        return tuple(o.split("=", 1)[1] for o in self.overrides if _secret(o) and o.split("=", 1)[1])

    def summary(self) -> dict:
        """A JSON-able description (stored on the study and the summary run)."""
        return {"sweep": str(self.path), "overrides": redacted(self.overrides),
                "space": {p.key: _param_dict(p) for p in self.space},
                "objectives": [dataclasses.asdict(o) for o in self.objectives],
                "sampler": self.sampler, "pruner": self.pruner, "n_trials": self.n_trials}  # fmt: skip


def override(key: str, value) -> str:
    """`key=value` in Hydra's override syntax."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, int):
        text = repr(value)
    elif isinstance(value, float):
        text = repr(round(value, 12))  # 0.7000000000000001 (a stepped float) -> 0.7
    else:
        text = str(value)
        if not _PLAIN.match(text):
            text = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"{key}={text}"


def redacted(overrides) -> list[str]:
    return [f"{override_key(o)}=<redacted>" if _secret(o) else o for o in overrides]


def _secret(item: str) -> bool:
    return override_key(item).lower().endswith(("api_key", "password", "token", "secret"))


def override_key(item: str) -> str:
    return item.split("=", 1)[0].lstrip("+~")


# ----- the sweep file's schema (kbx.core.schema: one line per failure) -----------------------------

Choice = str | int | float | bool | None
When = dict[Text, Choice | list[Choice]] | None  # earlier parameter -> its value(s) for which this one is searched
Override = Annotated[Text, StringConstraints(pattern="="), Field(description="key=value")]


class _Range(Schema):
    low: float
    high: float
    step: Annotated[float, Field(gt=0)] | None = None
    log: bool = False
    when: When = None

    @model_validator(mode="after")
    def _ordered(self):
        if self.low > self.high:
            raise rule(f"low ({self.low:g}) is above high ({self.high:g})")
        if self.log and (self.low <= 0 or self.step not in (None, 1)):
            raise rule("log needs low > 0 and no step")
        return self


class IntRange(_Range):
    type: Literal["int"]
    low: int
    high: int
    step: Annotated[int, Field(gt=0)] | None = None


class FloatRange(_Range):
    type: Literal["float"]


class Categorical(Schema):
    type: Literal["categorical"]
    choices: list[Choice] = Field(min_length=1)
    when: When = None


def _choices_shorthand(raw):
    """`prompt: [base, math]` is short for `{type: categorical, choices: [base, math]}`."""
    return {"type": "categorical", "choices": raw} if isinstance(raw, list) else raw


Searched = Annotated[Union[IntRange, FloatRange, Categorical], Field(discriminator="type",  # noqa: UP007
                     description="or a list of choices"), BeforeValidator(_choices_shorthand)]  # fmt: skip


class ObjectiveSettings(Schema):
    metric: Literal[METRICS]
    direction: Literal[DIRECTIONS]


class Sampler(Schema):
    model_config = ConfigDict(extra="allow")  # the rest: keyword arguments of the Optuna sampler
    name: Literal[tuple(SAMPLERS)]


class Pruner(Schema):
    model_config = ConfigDict(extra="allow")  # the rest: keyword arguments of the Optuna pruner
    name: Literal[tuple(PRUNERS)]


def _named(raw):
    """`sampler: tpe` is short for `{name: tpe}`; `pruner:` with no value is `{name: none}`."""
    return {"name": "none"} if raw is None else {"name": raw} if isinstance(raw, str) else raw


class SweepFile(Schema):
    description: Text = ""
    overrides: list[Override] = Field(default_factory=list)
    space: dict[Text, Searched] = Field(min_length=1)
    objectives: Annotated[list[ObjectiveSettings], Field(min_length=1),
                          BeforeValidator(lambda raw: [raw] if isinstance(raw, dict) else raw)]  # fmt: skip
    sampler: Annotated[Sampler, BeforeValidator(_named)] = Sampler(name="tpe")
    pruner: Annotated[Pruner, BeforeValidator(_named)] = Pruner(name="none")
    n_trials: Annotated[int, Field(ge=1)] = 10  # trials the study should have (done or pruned)
    study: Text = ""
    storage: Text = ""
    heartbeat_s: Annotated[int, Field(ge=1)] = 60

    @model_validator(mode="after")
    def _consistent(self):
        _check_when(self.space)
        doubled = [o for o in self.overrides if override_key(o) in self.space]
        if doubled:
            raise rule(f"overrides: {override_key(doubled[0])} is also in space; list it in one place")
        if len({o.metric for o in self.objectives}) != len(self.objectives):
            raise rule("objectives: an objective metric is listed twice")
        if self.pruner.name not in ("none", "nop"):
            if len(self.objectives) > 1:
                raise rule("pruner: Optuna cannot prune multi-objective studies; use pruner: none")
            if self.objectives[0].direction != "maximize":
                raise rule("pruner: trials report their running correct rate, which only fits a maximised objective; "
                           "use pruner: none with direction minimize")  # fmt: skip
        floats = [key for key, p in self.space.items() if p.type == "float"]
        if self.sampler.name == "grid" and floats:
            raise rule(f"sampler grid needs discrete parameters; {floats[0]} is a float range "
                       "(make it categorical with the values to try)")  # fmt: skip
        return self


def _check_when(space: dict) -> None:
    """`when` names categorical parameters listed earlier, and values among their choices."""
    earlier: dict = {}
    for key, p in space.items():
        for other, values in (p.when or {}).items():
            if other not in earlier or earlier[other].type != "categorical":
                raise rule(f"space.{key}: when: {other} must be a categorical parameter listed before this one")
            bad = [v for v in (values if isinstance(values, list) else [values]) if v not in earlier[other].choices]
            if bad:
                raise rule(f"space.{key}: when: {bad[0]!r} is not a choice of {other}")
        earlier[key] = p


class SweepCommandLine(Schema):
    """The command line's own keys (SWEEP_KEYS); they win over the file's."""

    n_trials: Annotated[int, Field(ge=1)] = None  # None: not given (a default is not validated)
    storage: Text = ""
    study: Text = ""


def load(path: str | Path, argv: list[str]) -> SweepSpec:
    """Read the sweep file and apply the command line; every problem is a ConfigError naming the key."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"sweep file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({_one_line(exc)})") from None
    sweep = validate(SweepFile, data, where=f"{path}: ")
    cli, run_overrides = _command_line(argv)
    clash = [o for o in run_overrides if override_key(o) in sweep.space]
    if clash:
        raise ConfigError(f"{clash[0]!r}: {override_key(clash[0])} is searched by {path.name}; "
                          f"remove it from the command line or from the file's space")  # fmt: skip
    given = {override_key(o) for o in run_overrides}
    overrides = [o for o in sweep.overrides if override_key(o) not in given] + run_overrides
    space = tuple(_param(key, p) for key, p in sweep.space.items())
    objectives = tuple(Objective(o.metric, o.direction) for o in sweep.objectives)
    return SweepSpec(path, tuple(overrides), space, objectives, sweep.sampler.model_dump(), sweep.pruner.model_dump(),
                     cli.n_trials or sweep.n_trials, cli.study or sweep.study or path.stem, cli.storage or sweep.storage,
                     sweep.heartbeat_s)  # fmt: skip


def _command_line(argv: list[str]) -> tuple[SweepCommandLine, list[str]]:
    """The sweep's own keys (n_trials=, storage=, study=), and the kbx.run overrides."""
    import yaml

    cli, run_overrides = {}, []
    for item in argv:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        if key in SWEEP_KEYS:
            cli[key] = yaml.safe_load(value) if key == "n_trials" else value  # a number, as Hydra would read it
        else:
            run_overrides.append(item)
    return validate(SweepCommandLine, cli), run_overrides


def _param(key: str, p) -> Param:
    when = tuple((k, tuple(v if isinstance(v, list) else [v])) for k, v in (p.when or {}).items())
    if p.type == "categorical":
        return Param(key, p.type, choices=tuple(p.choices), when=when)
    return Param(key, p.type, low=p.low, high=p.high, step=p.step, log=p.log, when=when)


def _param_dict(p: Param) -> dict:
    out = {"type": p.type, "choices": list(p.choices)} if p.type == "categorical" else \
        {"type": p.type, "low": p.low, "high": p.high, "step": p.step, "log": p.log}  # fmt: skip
    if p.when:
        out["when"] = {k: list(v) for k, v in p.when}
    return out


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
