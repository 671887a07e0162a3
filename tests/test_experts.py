"""Every expert kernel passes the full evaluator (the interpreter on CPU; the GPU on the device).

Under the interpreter some constructs cannot run (bf16 arithmetic, libdevice, autotune); those
experts may come back `unsupported_on_cpu` but never as wrong.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbx.eval.evaluator import Attempt, EvalSettings, Evaluator
from kbx.eval.record import Status
from kbx.tasks import discover

EXPERTS = sorted(t.id for t in discover().values() if t.expert_path)


@pytest.fixture(scope="module")
def expert_records():
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tasks = discover()
    attempts = [Attempt(tasks[i], Path(tasks[i].expert_path).read_text(), "expert") for i in EXPERTS]
    with Evaluator(EvalSettings(device=device, workers=2)) as ev:
        return dict(zip(EXPERTS, ev.evaluate(attempts), strict=True))


def test_at_least_ten_experts_including_the_required_ones():
    required = {"Activation/gelu", "Math/add", "Reduce/sum", "MatrixMultiply/matmul", "Fusion/fused_add_gelu",
                "Quantization/matmul_w8a8"}  # fmt: skip
    assert len(EXPERTS) >= 10
    assert required <= set(EXPERTS)


@pytest.mark.parametrize("task_id", EXPERTS)
def test_expert_passes(expert_records, task_id):
    record = expert_records[task_id]
    allowed = {Status.OK} if record.device == "cuda" else {Status.OK, Status.UNSUPPORTED_ON_CPU}
    assert record.status in allowed, f"{record.status.value}: {record.reason}\n{record.message}\n{record.output_tail}"
    assert record.triton_launches > 0
    if record.status is Status.OK:
        assert record.cases_passed == record.cases_total > 0
