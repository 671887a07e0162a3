"""method=predictions: stored predictions in upstream's JSONL format.

Each line is an object with the code in "predict" (possibly fenced, possibly a whole upstream file
with its test harness below the separator) and the task in "file" ("Activation/gelu.py") or
"task" ("Activation/gelu"); an optional "round" k (default 0) makes it iteration k. Unknown
fields are ignored. The whole file is read and checked before any evaluation: a malformed line is
an error naming its line number; a task kbx does not know is reported, one line each, and skipped.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
from pathlib import Path

from kbx.core.record import EvalRecord
from kbx.core.source import extract_code
from kbx.methods.base import MethodError, Proposal
from kbx.tasks.spec import TaskInfo

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PredictionLine:
    line: int  # 1-based line number in the file
    task: str  # "Category/stem"
    round: int
    code: str  # extracted kernel code ("" when the prediction holds none)


def task_id_of(record: dict) -> str:
    """'Category/stem' from a line's "task" or "file" field ("" when neither is usable)."""
    value = record.get("task") or record.get("file") or ""
    if not isinstance(value, str):
        return ""
    value = value.strip().removeprefix("./")
    for prefix in ("data/kernelbenchx/", "kernelbenchx/"):
        value = value.removeprefix(prefix)
    return value.removesuffix(".py")


def read_predictions(path: str | Path, allow_empty: bool = False) -> list[PredictionLine]:
    """Parse and validate every line; raises MethodError on the first malformed one, and on a file
    without predictions unless `allow_empty` (an empty file is more often a failed export than intent)."""
    path = Path(path)
    if not path.exists():  # a pipe (`<(...)`) counts: only the lines matter
        raise MethodError(f"predictions file not found: {path}")
    if path.is_dir():
        raise MethodError(f"predictions path is a directory, not a JSONL file: {path}")
    lines = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            text = _decode(raw, path, number)
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise MethodError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise MethodError(f"{path}:{number}: expected a JSON object")
            if not isinstance(record.get("predict"), str):
                raise MethodError(f"{path}:{number}: missing string field 'predict'")
            task = task_id_of(record)
            if task.count("/") != 1:
                raise MethodError(f"{path}:{number}: needs 'file' (e.g. Activation/gelu.py) or 'task' (Activation/gelu)")
            round_index = record.get("round", 0)
            if not isinstance(round_index, int) or isinstance(round_index, bool) or round_index < 0:
                raise MethodError(f"{path}:{number}: 'round' must be a non-negative integer")
            lines.append(PredictionLine(number, task, round_index, extract_code(record["predict"])))
    if not lines and not allow_empty:
        raise MethodError(f"{path} holds no predictions (empty file); allow that with --allow-empty "
                          "(kbx.evaluate) or method.allow_empty=true (kbx.run)")  # fmt: skip
    return lines


def _decode(raw: bytes, path: Path, number: int) -> str:
    """One line as text; binary content (a NUL byte) or bytes that are not UTF-8 are an error naming the line."""
    nul = raw.find(b"\0")
    if nul >= 0:
        raise MethodError(f"{path}:{number}: binary content (a NUL byte at column {nul + 1}), not a JSONL text file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MethodError(f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None


class PredictionsMethod:
    name = "predictions"

    def __init__(self, lines: list[PredictionLine]) -> None:
        self.by_task_round: dict[tuple[str, int], list[PredictionLine]] = collections.defaultdict(list)
        for line in lines:
            self.by_task_round[(line.task, line.round)].append(line)

    def report_unknown(self, known_ids: set[str]) -> list[str]:
        """One message per prediction line whose task kbx does not have."""
        unknown = sorted({(l.line, l.task) for ls in self.by_task_round.values() for l in ls if l.task not in known_ids})  # noqa: E741
        return [f"line {n}: unknown task {t!r}, skipped" for n, t in unknown]

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        return [Proposal(l.code, f"line{l.line}") for l in self.by_task_round.get((task.id, round_index), [])]  # noqa: E741


def build(path: str, name: str = "predictions", allow_empty: bool = False) -> PredictionsMethod:
    return PredictionsMethod(read_predictions(path, allow_empty))
