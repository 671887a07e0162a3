"""The sweep file (sweeps/*.yaml) and the command line, parsed into a validated `SweepSpec`.

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
import math
import re
from pathlib import Path

from kbx.core.errors import ConfigError

SWEEP_KEYS = ("n_trials", "storage", "study")  # command-line keys that belong to the sweep, not to kbx.run
FILE_KEYS = {"description", "overrides", "space", "objectives", "sampler", "pruner", "n_trials", "study", "storage",
             "heartbeat_s"}  # fmt: skip
# What a trial can optimise: Job.run's summary, plus total_tokens (prompt + completion).
METRICS = ("correct_rate", "compile_rate", "fast_1", "geomean_speedup", "n_timed", "llm_calls", "llm_errors",
           "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")  # fmt: skip
DIRECTIONS = ("maximize", "minimize")
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
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with keys space, objectives, ... (got {type(data).__name__})")
    unknown = sorted(set(data) - FILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(FILE_KEYS))}")
    where = str(path)

    cli, run_overrides = {}, []
    for item in argv:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        if key in SWEEP_KEYS:
            cli[key] = value
        else:
            run_overrides.append(item)

    space = _space(data.get("space"), where)
    searched = {p.key for p in space}
    clash = [o for o in run_overrides if override_key(o) in searched]
    if clash:
        raise ConfigError(f"{clash[0]!r}: {override_key(clash[0])} is searched by {path.name}; "
                          f"remove it from the command line or from the file's space")  # fmt: skip
    file_overrides = data.get("overrides") or []
    if not isinstance(file_overrides, list) or not all(isinstance(o, str) and "=" in o for o in file_overrides):
        raise ConfigError(f"{where}: overrides must be a list of key=value strings")
    doubled = [o for o in file_overrides if override_key(o) in searched]
    if doubled:
        raise ConfigError(f"{where}: overrides: {override_key(doubled[0])} is also in space; list it in one place")
    given = {override_key(o) for o in run_overrides}
    overrides = [o for o in file_overrides if override_key(o) not in given] + run_overrides

    objectives = _objectives(data.get("objectives"), where)
    sampler = _named(data.get("sampler", {"name": "tpe"}), "sampler", where)
    pruner = _named(data.get("pruner", {"name": "none"}), "pruner", where)
    if pruner["name"] not in ("none", "nop"):
        if len(objectives) > 1:
            raise ConfigError(f"{where}: pruner: Optuna cannot prune multi-objective studies; use pruner: none")
        if objectives[0].direction != "maximize":
            raise ConfigError(f"{where}: pruner: trials report their running correct rate, which only fits a "
                              f"maximised objective; use pruner: none with direction minimize")  # fmt: skip
    n_trials = _positive_int(cli.get("n_trials", data.get("n_trials", 10)), "n_trials")
    heartbeat = _positive_int(data.get("heartbeat_s", 60), "heartbeat_s")
    study = str(cli.get("study") or data.get("study") or path.stem)
    storage = str(cli.get("storage") or data.get("storage") or "")
    return SweepSpec(path, tuple(overrides), space, objectives, sampler, pruner, n_trials, study, storage, heartbeat)


def _space(raw, where: str) -> tuple[Param, ...]:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where}: space must map kbx.run keys to ranges, e.g. iteration.rounds: "
                          f"{{type: int, low: 1, high: 3}}")  # fmt: skip
    params: list[Param] = []
    for key, value in raw.items():
        p = _param(str(key), value, where, {q.key: q for q in params})
        params.append(p)
    return tuple(params)


def _param(key: str, raw, where: str, earlier: dict[str, Param]) -> Param:
    at = f"{where}: space.{key}"
    if isinstance(raw, list):
        raw = {"type": "categorical", "choices": raw}
    if not isinstance(raw, dict):
        raise ConfigError(f"{at}: expected {{type: int|float|categorical, ...}} or a list of choices, got {raw!r}")
    raw = dict(raw)
    when = _when(raw.pop("when", None), at, earlier)
    return dataclasses.replace(_typed(key, raw, at), when=when)


def _when(raw, at: str, earlier: dict[str, Param]) -> tuple:
    """`when: {method: best_of_n}` or `{method: [a, b]}`; keys must be categorical parameters listed earlier."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{at}: when must map an earlier parameter to its value(s), e.g. when: {{method: best_of_n}}")
    out = []
    for key, values in raw.items():
        values = values if isinstance(values, list) else [values]
        if key not in earlier or earlier[key].type != "categorical":
            raise ConfigError(f"{at}: when: {key} must be a categorical parameter listed before this one")
        bad = [v for v in values if v not in earlier[key].choices]
        if bad:
            raise ConfigError(f"{at}: when: {bad[0]!r} is not a choice of {key}")
        out.append((key, tuple(values)))
    return tuple(out)


def _typed(key: str, raw: dict, at: str) -> Param:
    kind = raw.get("type")
    allowed = {"int": {"type", "low", "high", "step", "log"}, "float": {"type", "low", "high", "step", "log"},
               "categorical": {"type", "choices"}}.get(kind)  # fmt: skip
    if allowed is None:
        raise ConfigError(f"{at}: type must be int, float or categorical, got {kind!r}")
    extra = sorted(set(raw) - allowed)
    if extra:
        raise ConfigError(f"{at}: unknown field(s) {', '.join(extra)} for type {kind}")
    if kind == "categorical":
        choices = raw.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"{at}: choices must be a non-empty list")
        if not all(c is None or isinstance(c, bool | int | float | str) for c in choices):
            raise ConfigError(f"{at}: choices must be strings, numbers, booleans or null")
        return Param(key, kind, choices=tuple(choices))
    number = int if kind == "int" else (int, float)
    low, high, step = raw.get("low"), raw.get("high"), raw.get("step")
    for name, v in (("low", low), ("high", high), ("step", step)):
        if (v is not None or name != "step") and (not isinstance(v, number) or isinstance(v, bool) or
                                                   (isinstance(v, float) and not math.isfinite(v))):  # fmt: skip
            raise ConfigError(f"{at}: {name} must be {'an integer' if kind == 'int' else 'a number'}, got {v!r}")
    if low > high:
        raise ConfigError(f"{at}: low ({low}) is above high ({high})")
    log = raw.get("log", False)
    if not isinstance(log, bool) or (log and (low <= 0 or step not in (None, 1))):
        raise ConfigError(f"{at}: log must be true or false; log needs low > 0 and no step")
    if step is not None and step <= 0:
        raise ConfigError(f"{at}: step must be positive, got {step!r}")
    return Param(key, kind, low=low, high=high, step=step, log=log)


def _objectives(raw, where: str) -> tuple[Objective, ...]:
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: objectives must be a list like [{{metric: correct_rate, direction: maximize}}]")
    out = []
    for item in raw:
        if not isinstance(item, dict) or set(item) != {"metric", "direction"}:
            raise ConfigError(f"{where}: each objective needs exactly metric and direction, got {item!r}")
        if item["metric"] not in METRICS:
            raise ConfigError(f"{where}: objective metric {item['metric']!r} is not one of {', '.join(METRICS)}")
        if item["direction"] not in DIRECTIONS:
            raise ConfigError(f"{where}: objective direction must be maximize or minimize, got {item['direction']!r}")
        out.append(Objective(item["metric"], item["direction"]))
    if len({o.metric for o in out}) != len(out):
        raise ConfigError(f"{where}: an objective metric is listed twice")
    return tuple(out)


def _named(raw, what: str, where: str) -> dict:
    if isinstance(raw, str):
        raw = {"name": raw}
    if raw is None:
        raw = {"name": "none"}
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"{where}: {what} must be {{name: ..., <keyword arguments>}}, got {raw!r}")
    return dict(raw)


def _positive_int(value, key: str) -> int:
    try:
        n = int(value)
        if str(n) != str(value).strip():
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a positive integer, got {value!r}") from None
    if n < 1:
        raise ConfigError(f"{key} must be a positive integer, got {value!r}")
    return n


def _param_dict(p: Param) -> dict:
    out = {"type": p.type, "choices": list(p.choices)} if p.type == "categorical" else \
        {"type": p.type, "low": p.low, "high": p.high, "step": p.step, "log": p.log}  # fmt: skip
    if p.when:
        out["when"] = {k: list(v) for k, v in p.when}
    return out


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
