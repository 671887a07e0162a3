"""What a method hands the evaluator, and what it may expect back.

Methods and the loop depend on this contract alone; the driver's Evaluator (and its pools and
journal) satisfy it, so no method imports the evaluator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

from kbx.core.record import EvalRecord
from kbx.tasks.spec import TaskInfo


@dataclasses.dataclass(frozen=True)
class Attempt:
    """Code to judge for one task. `label` says where it came from (method, round, candidate).
    `expert`: the code is kbx's own expert kernel (method=reference, the benchmarks), which may use
    kbx.experts, the Triton pieces experts share; any other code that reaches for them is
    `borrowed_answer` (kbx.sandbox.answers). Never set for code from a model or a user."""

    task: TaskInfo
    code: str
    label: str = ""
    expert: bool = False


class Evaluates(Protocol):
    """Judges attempts concurrently; records come back in input order, `on_record(i, record)` as each lands."""

    def evaluate(
        self, attempts: Sequence[Attempt], on_record: Callable[[int, EvalRecord], None] | None = None
    ) -> list[EvalRecord]: ...
