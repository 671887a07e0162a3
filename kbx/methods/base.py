"""What a generation method supplies to the one evaluation loop: code proposals, round by round.

A method never evaluates anything itself. `kbx.methods.loop` asks it for proposals for each task and
round, judges them with the shared evaluator, and hands the records back as history, so every
method is scored by the same rules and sees the same feedback.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from kbx.core.errors import MethodError  # noqa: F401 - raised by every method
from kbx.core.record import EvalRecord
from kbx.tasks.spec import TaskInfo


@dataclasses.dataclass(frozen=True)
class Proposal:
    """One piece of code to judge. `label` distinguishes candidates within a round; `expert` marks
    kbx's own expert kernel (kbx.contract.attempt.Attempt). `cut_off` says why the code is incomplete
    (the LLM's answer stopped at its token limit inside it): such a proposal is recorded as
    `truncated`, with that reason, and not judged."""

    code: str
    label: str
    expert: bool = False
    cut_off: str = ""


class Method(Protocol):
    name: str

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        """Proposals for `task` in this round; [] when the method has nothing (more) to offer."""
        ...
