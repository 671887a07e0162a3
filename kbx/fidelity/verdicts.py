"""Joining kbx's records with the corpus lines they judged, and the agreement per GPU.

A results file is what `python -m kbx.evaluate CORPUS --json OUT` writes: one record per corpus
line, in order, each naming its 1-based `line`. Upstream's verdict is the line's `upstream`
object: `exe_ok` (its correctness stage passed), `call_ok` (its call stage).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kbx.core.errors import ConfigError
from kbx.core.record import Status
from kbx.fidelity.causes import Cause, classify
from kbx.methods.predictions import read_predictions
from kbx.tasks.spec import TaskInfo

# Statuses that are no verdict on the kernel: kbx's own failure, or a kernel the CPU interpreter cannot run.
NO_VERDICT = frozenset({Status.HARNESS_ERROR, Status.QUARANTINED, Status.UNSUPPORTED_ON_CPU})
RECORD_KEYS = ("line", "task", "status", "correct", "compiled")


@dataclasses.dataclass(frozen=True)
class CorpusLine:
    line: int
    task: str  # "Category/stem"
    round: int
    code: str
    upstream_correct: bool
    upstream_compiled: bool


@dataclasses.dataclass(frozen=True)
class Row:
    """One corpus line as kbx judged it on one GPU."""

    corpus: CorpusLine
    record: dict
    cause: Cause | None  # None where kbx and upstream agree

    @property
    def status(self) -> str:
        return self.record["status"]


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Every corpus line of kbx's tasks, on one GPU."""

    label: str
    path: str
    corpus_lines: int
    rows: list[Row]  # lines kbx has a task for and judged (a verdict or none)
    missing: list[CorpusLine]  # lines of kbx's tasks the results file has no record for

    @property
    def judged(self) -> list[Row]:
        return [r for r in self.rows if Status(r.status) not in NO_VERDICT]

    @property
    def no_verdict(self) -> list[Row]:
        return [r for r in self.rows if Status(r.status) in NO_VERDICT]

    @property
    def disagreements(self) -> list[Row]:
        return [r for r in self.judged if r.cause is not None]

    @property
    def agree(self) -> int:
        return len(self.judged) - len(self.disagreements)

    @property
    def upstream_defective(self) -> int:
        return sum(r.cause.upstream_defect for r in self.disagreements)

    @property
    def compile_agree(self) -> int:
        return sum(bool(r.record["compiled"]) == r.corpus.upstream_compiled for r in self.judged)

    @property
    def extra_failed(self) -> int:
        return sum(int(r.record.get("extra_cases_failed") or 0) > 0 for r in self.judged)


def read_corpus(path: str | Path) -> dict[int, CorpusLine]:
    """The corpus lines by line number, each with upstream's verdict."""
    predictions = read_predictions(path)
    raw = Path(path).read_text(encoding="utf-8").splitlines()
    out = {}
    for p in predictions:
        upstream = json.loads(raw[p.line - 1]).get("upstream")
        if not isinstance(upstream, dict) or not isinstance(upstream.get("exe_ok"), bool):
            raise ConfigError(f"{path}:{p.line}: no upstream verdict (an 'upstream' object with boolean exe_ok)")
        out[p.line] = CorpusLine(p.line, p.task, p.round, p.code, upstream["exe_ok"], bool(upstream.get("call_ok")))
    return out


def read_results(path: str | Path) -> list[dict]:
    """kbx.evaluate's JSON list of records, checked for the fields the comparison reads."""
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read results file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a kbx.evaluate results file (invalid JSON: {exc.msg})") from None
    if not isinstance(records, list):
        raise ConfigError(f"{path}: not a kbx.evaluate results file (expected a JSON list of records)")
    for i, r in enumerate(records):
        if not isinstance(r, dict) or any(k not in r for k in RECORD_KEYS):
            raise ConfigError(f"{path}: record {i + 1} lacks {', '.join(RECORD_KEYS)}: not kbx.evaluate output")
        if r["status"] not in {s.value for s in Status}:
            raise ConfigError(f"{path}: record {i + 1} has unknown status {r['status']!r}")
    return records


def compare_results(label: str, path: str, corpus: dict[int, CorpusLine], tasks: dict[str, TaskInfo]) -> Comparison:
    records = read_results(path)
    rows, seen = [], set()
    for r in records:
        line = corpus.get(r["line"])
        if line is None or line.task != r["task"]:
            raise ConfigError(f"{path}: record for line {r['line']} ({r['task']}) does not match the corpus "
                              f"({line.task if line else 'no such line'}): judged from another file?")  # fmt: skip
        seen.add(line.line)
        if r["status"] == Status.UNKNOWN_TASK.value:
            continue
        agree = bool(r["correct"]) == line.upstream_correct or Status(r["status"]) in NO_VERDICT
        cause = None if agree else classify(r, line.upstream_compiled, tasks.get(line.task), line.code)
        rows.append(Row(line, r, cause))
    missing = [c for n, c in sorted(corpus.items()) if n not in seen and c.task in tasks]
    return Comparison(label, str(path), len(corpus), rows, missing)
