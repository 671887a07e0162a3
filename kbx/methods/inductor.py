"""method=inductor: no LLM; the Triton code that `torch.compile` (Inductor) generates for the
task's own PyTorch reference, judged like any other kernel (round 0 only).

The proposal carries the task file's source, runs it as a module and compiles its reference (a
dtype variant's own, for a variant) inside the worker, so Inductor's generated Triton kernels are
what runs, and the worker's launch counter (which also hooks Inductor's kernel launcher) sees them.
It carries the source because the sandbox hides the tasks folder from every candidate. Inductor emits Triton only
for CUDA devices: on a CPU it would generate C++, which is not a Triton kernel, so the method
refuses to run there.

`dynamic=False` compiles each input signature (shapes, dtypes, ranks) on its own, the fastest
kernels torch.compile can give; but past Dynamo's recompile limit (8 by default) it runs every new
signature eagerly. A task's cases alone use up to 18, so on an H100 (2026-12-05, docs/BENCHMARKS.md)
128 of 184 tasks timed eager PyTorch at their perf shapes and called it torch.compile. The limit
is raised to RECOMPILE_LIMIT, and the judge's launch check at each perf shape catches any shape
still run eagerly.

Dynamo also gives up on a function for good once a call of it is converted without a graph: a call
that raises (a task's invalid-argument case) or one with no tensors (a Python-number case). Every
later call, at every shape, then runs eagerly: on an H200 (2026-12-06, docs/BENCHMARKS.md) the perf
shapes of elementwise fusions with such a case were `no_triton`. So the entry resets Dynamo's state
(`torch.compiler.reset`) after such a call, and later signatures are compiled as if it had not happened.
"""

from __future__ import annotations

from pathlib import Path

from kbx.core.record import EvalRecord
from kbx.methods.base import MethodError, Proposal
from kbx.tasks.spec import TaskInfo

TEMPLATE = '''\
"""torch.compile (Inductor, mode={mode!r}) of the PyTorch reference of {task_id}."""
import sys
import types

import torch
from torch._dynamo.utils import counters as _dynamo_counters

torch._dynamo.config.recompile_limit = {recompile_limit}  # each case and perf shape compiled, none run eagerly
torch._dynamo.config.accumulated_recompile_limit = {recompile_limit}
_TASK_SOURCE = {source!r}
_task = sys.modules["kbx_inductor_task"] = types.ModuleType("kbx_inductor_task")  # Dynamo looks it up
exec(compile(_TASK_SOURCE, {path!r}, "exec"), _task.__dict__)
_chosen = next(t for t in [_task.TASK, *getattr(_task, "VARIANTS", [])] if t.entry == {entry!r})  # or a dtype variant
_compiled = torch.compile(_chosen.reference, mode={mode!r}, dynamic=False)


def {entry}(*args, **kwargs):
    """Dynamo runs a function eagerly for good once a call of it is converted without a graph (it
    raised, or had no tensors): its state is reset after such a call, so later ones are compiled."""
    frames, graphs = _dynamo_counters["frames"]["total"], _dynamo_counters["stats"]["unique_graphs"]
    try:
        return _compiled(*args, **kwargs)
    finally:
        if _dynamo_counters["frames"]["total"] > frames and _dynamo_counters["stats"]["unique_graphs"] == graphs:
            torch.compiler.reset()
'''


RECOMPILE_LIMIT = 256  # input signatures compiled per entry; the largest task has 22 (cases and perf shapes)


class InductorMethod:
    name = "inductor"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        if round_index > 0:
            return []
        source = Path(task.path).read_text()
        code = TEMPLATE.format(mode=self.mode, task_id=task.id, path=task.path, source=source, entry=task.spec.entry,
                               recompile_limit=RECOMPILE_LIMIT)
        return [Proposal(code, "inductor")]


MODES = ("default", "max-autotune-no-cudagraphs")  # method.mode (the schema, kbx/job/schema.py, checks it)


def build(hardware=None, mode: str = "default", name: str = "inductor") -> InductorMethod:
    if hardware is not None and hardware.device != "cuda":
        raise MethodError("method=inductor needs a CUDA GPU: on a CPU torch.compile generates C++, not Triton")
    return InductorMethod(mode)
