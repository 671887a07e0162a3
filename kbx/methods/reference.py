"""method=reference: kbx's expert Triton kernels, one per task where one exists (round 0 only)."""

from __future__ import annotations

from pathlib import Path

from kbx.core.record import EvalRecord
from kbx.methods.base import Proposal
from kbx.tasks.spec import TaskInfo


class ReferenceMethod:
    name = "reference"

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        if round_index > 0 or not task.expert_path:
            return []
        return [Proposal(Path(task.expert_path).read_text(), "expert", expert=True)]


def build(name: str = "reference") -> ReferenceMethod:
    return ReferenceMethod()
