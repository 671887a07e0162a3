"""Configuration schemas: pydantic models of what each key may hold, and their one-line errors.

Every configuration kbx reads is checked against a model before any work: the composed `kbx.run`
config (kbx/job/schema.py) and a sweep file (kbx/sweeps/spec.py). A wrong type, a value out of range,
a choice that does not exist, a key the model does not know and a rule between keys all come back
as one line naming the key and what it may hold:

    iteration.rounds: expected an integer >= 1, got 'three'
    llm.temprature: unknown key; did you mean llm.temperature?

Why pydantic and not Hydra's structured configs: both were tried on conf/llm and conf/iteration
(dataclasses in Hydra's ConfigStore as the groups' first default). Hydra checks while it composes,
inside `hydra.main`, so its errors are its own multi-line report (`Error merging override
iteration.rounds=three`, then `Value 'three' of type 'str' could not be converted to Integer`,
`full_key: ...`, `object_type=...`) with exit status 1 before kbx has control; it checks types only
(iteration.rounds=0 passed: no ranges, no choices short of Enum classes); `+llm.temprature=0.5` was
taken, and its message for `llm.temprature=0.5` ("Could not override") suggests no key. A pydantic
model checks the config Hydra composed, after composition: config groups, `-m` multiruns and the
compose API (kbx.sweep) are untouched, and one model holds types, ranges, choices, unknown keys and
the rules between keys, each failure with its key path.

Models carry no defaults: the YAML files under conf/ hold every default and its comment; a model only
says what a value may be. `strict`: no silent conversion (`true` is not the integer 1, '3' not 3),
except that a number is taken where text is expected (experiment=2024).
"""

from __future__ import annotations

import difflib
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

from kbx.core.errors import ConfigError

RULE_ERROR = "kbx_rule"  # the error type of a rule between keys (`rule`): its message is shown as written
SHOWN_VALUE_CHARS = 80  # a value longer than this is cut in a message
_ABSENT = object()  # a location the data does not have (a validator reshaped it on the way)
KEY_DISCRIMINATOR = "name"  # tells a config group's options apart (method.name): written as Hydra does, method=<name>


class Schema(BaseModel):
    """Base of every configuration model: unknown keys, loose types, NaN and infinity are errors."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


def _number_to_text(value):
    """Hydra reads `experiment=2024` as an integer; where text is expected, a number is its text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


Text = Annotated[str, BeforeValidator(_number_to_text)]


def rule(message: str) -> PydanticCustomError:
    """The failure of a rule between keys, for a model validator to raise; shown as `message`."""
    return PydanticCustomError(RULE_ERROR, "{message}", {"message": message})


def validate(model: type[Schema], data, where: str = "") -> Schema:
    """`data` as `model`; the first failure is a ConfigError of one line, prefixed with `where`. An
    unknown key comes first: a misspelt key is also a missing one, and its name says more."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")  # stable: else pydantic's order
        raise ConfigError(where + explain(model.model_json_schema(), data, errors[0])) from None


def explain(schema: dict, data, error: dict) -> str:
    """One line for one pydantic error: the dotted key, then what it may hold and what it holds."""
    kind, loc = error["type"], error["loc"]
    if kind == "extra_forbidden":
        return _unknown_key(schema, data, loc)
    spot = _locate(schema, data, loc)
    key = ".".join(spot.path)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        prop = error["ctx"]["discriminator"].strip("'")  # the key that names the option: method.name
        tags = sorted(spot.node["discriminator"]["mapping"])
        got = f"got {_shown(error['ctx']['tag'])}" if kind == "union_tag_invalid" else "missing"
        return f"{_join(key, prop)}: expected one of {', '.join(tags)}, {got}"
    if kind in (RULE_ERROR, "value_error", "assertion_error"):
        message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        return f"{key}: {message}" if key else message
    at = f"{key}: " if key else ""
    if kind == "missing":
        return f"{at}missing; expected {describe(spot.node, spot.defs)}"
    value = error["input"] if spot.value is _ABSENT else spot.value  # the data, unless a validator reshaped it
    return f"{at}expected {describe(spot.node, spot.defs)}, got {_shown(value)}"


class _Spot:
    """Where an error's location leads in the schema and in the data: the user's dotted key (a tagged
    union's tag is not part of it), the schema node there, the value there."""

    def __init__(self, schema: dict, data) -> None:
        self.defs = schema.get("$defs", {})
        self.node, self.value, self.path = schema, data, []
        self.union: tuple[str, str, str, dict] | None = None  # the last tagged union: key, property, tag, options


def _locate(schema: dict, data, loc: tuple) -> _Spot:
    spot = _Spot(schema, data)
    for part in loc:
        node = _resolve(spot.node, spot.defs)
        tags = node.get("discriminator", {}).get("mapping", {})
        if str(part) in tags:  # a tagged union's member: the tag is in the location, not in the key
            options = {tag: _resolve({"$ref": ref}, spot.defs) for tag, ref in tags.items()}
            spot.union = (".".join(spot.path), node["discriminator"]["propertyName"], str(part), options)
            spot.node = options[str(part)]
            continue
        if "anyOf" in node:  # an untagged union is told as a whole, at its own key
            spot.node = node
            break
        if isinstance(part, int) and "items" in node:
            spot.node = node["items"]
        elif str(part) in node.get("properties", {}):
            spot.node = node["properties"][str(part)]
        elif isinstance(node.get("additionalProperties"), dict):
            spot.node = node["additionalProperties"]
        else:
            spot.node = {}
        spot.path.append(str(part))
        spot.value = _child(spot.value, part)
    spot.node = _resolve(spot.node, spot.defs)
    return spot


def _unknown_key(schema: dict, data, loc: tuple) -> str:
    """`key: unknown key` with the nearest known key; under a tagged union (a method), the option it is
    a key of, and the other options that have it."""
    parent = _locate(schema, data, loc[:-1])
    name = str(loc[-1])
    key = _join(".".join(parent.path), name)
    known = [k for k in parent.node.get("properties", {}) if not k.startswith("_")]
    if parent.union is not None and parent.union[0] == ".".join(parent.path):
        where, prop, tag, options = parent.union
        label = f"{where}=" if prop == KEY_DISCRIMINATOR else f"{prop}="
        owners = [t for t, node in options.items() if t != tag and name in node.get("properties", {})]
        if owners:
            return f"{key}: not a setting of {label}{tag} (it belongs to {' or '.join(label + t for t in owners)})"
        return f"{key}: not a setting of {label}{tag}; {_nearest(parent.path, name, known)}"
    return f"{key}: unknown key; {_nearest(parent.path, name, known)}"


def _nearest(path: list[str], name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"did you mean {_join('.'.join(path), close[0])}?" if close else f"valid keys: {', '.join(known)}"


def describe(node: dict, defs: dict, plural: bool = False) -> str:
    """What a schema node admits, in words: `an integer >= 1`, `one of local, ray`, `a list of integers`."""
    node = _resolve(node, defs)
    if "const" in node:
        text = _word(node["const"])
    elif "enum" in node:
        text = "one of " + ", ".join(_word(v) for v in node["enum"])
    elif "anyOf" in node:
        text = " or ".join(describe(n, defs, plural) for n in node["anyOf"])
    elif "discriminator" in node:
        prop = node["discriminator"]["propertyName"]
        text = f"a mapping with {prop}: one of {', '.join(sorted(node['discriminator']['mapping']))}"
    else:
        text = _typed(node, defs, plural)
    bounds = _bounds(node)
    text = f"{text} {bounds}" if bounds else text
    return f"{text} ({node['description']})" if node.get("description") else text


_NOUNS = {"integer": ("an integer", "integers"), "number": ("a number", "numbers"), "string": ("a string", "strings"),
          "boolean": ("true or false", "booleans"), "null": ("null", "nulls"), "object": ("a mapping", "mappings")}  # fmt: skip


def _typed(node: dict, defs: dict, plural: bool) -> str:
    kind = node.get("type")
    if kind == "array":
        items = node.get("items")
        text = "a list" + (f" of {describe(items, defs, plural=True)}" if items else "")
        return text.replace("a list", "a non-empty list", 1) if node.get("minItems") else text
    if kind == "object" and node.get("properties"):
        return f"a mapping with keys {', '.join(node['properties'])}"
    if kind == "object" and node.get("minProperties"):
        return "a non-empty mapping"
    one, many = _NOUNS.get(kind, ("a value", "values"))
    if kind == "string" and node.get("minLength"):
        one, many = "a non-empty string", "non-empty strings"
    return many if plural else one


def _bounds(node: dict) -> str:
    marks = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))
    return " and ".join(f"{sign} {node[k]:g}" for k, sign in marks if isinstance(node.get(k), int | float))


def _resolve(node: dict, defs: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node if isinstance(node, dict) else {}


def _child(value, part):
    if isinstance(value, dict) and part in value:
        return value[part]
    if isinstance(value, list | tuple) and isinstance(part, int) and -len(value) <= part < len(value):
        return value[part]
    return _ABSENT


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _word(value) -> str:
    """A value as written in YAML or on the command line: true, null, E."""
    if value is None or isinstance(value, bool):
        return {True: "true", False: "false", None: "null"}[value]
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _shown(value) -> str:
    text = _word(value) if value is None or isinstance(value, bool) else repr(value)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 3] + "..."
