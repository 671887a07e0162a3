"""An LLM method's task result built by hand, with every kind of call and verdict, for the tests of what kbx
writes from it: traces (tests/tracking/test_traces.py), their sync (tests/tracking/test_sync.py) and
trajectories (tests/analysis/test_trajectories.py). Round 0: the generator answers on its second request
(a 500 first), the judge's score is replayed from the cache, the kernel fails; round 1: a reflection
fails for good, the refined kernel is correct and 2x faster, a second candidate meets a harness error."""

from __future__ import annotations

import math

from kbx.core.hardware import load_profiles
from kbx.core.record import EvalRecord, ShapeTiming, Status
from kbx.llm.client import Call, Try
from kbx.methods.llm import LoggedCall
from kbx.methods.loop import Judged, TaskResult
from kbx.tasks import discover

CPU = load_profiles()["cpu"]
SECRET = "sk-trace-SECRET-0123456789"
T0 = 1_800_000_000.0  # seconds since the epoch: the job's first call
SYSTEM = {"role": "system", "content": "You write Triton."}


FEEDBACK = ("Evaluation: status mismatch; compiled True; correct False (0/4 cases passed).\n"
            "Reason: case 0: 3 of 8 differ\nFix correctness if the kernel is wrong, otherwise make it faster.")


def call(role: str, text: str, started: float, *, tries=(), cached=False, error="", sample=0, cost=math.nan,
         task_id: str = "Math/add", history: tuple = ()) -> Call:  # fmt: skip
    prompt = (SYSTEM, {"role": "user", "content": f"Task {task_id}. key {SECRET}"}, *history)
    return Call(role, sample, prompt, text, 40, 10 if text else 0, cost, sum(t.duration_s for t in tries), cached,
                error, f"key-{role}-{started}", "openai/x", 0.7, 512, started, tuple(tries))  # fmt: skip


def timed_shape() -> ShapeTiming:
    return ShapeTiming(shape="n=1M", kernel_ms_median=0.5, kernel_ms_iqr=0.01, baseline_ms_median=1.0,
                       baseline_ms_iqr=0.01, reps=50, speedup=2.0, tflops=0.1, gbps=2000.0)  # fmt: skip


REFINE = ({"role": "assistant", "content": "```python\na = 1\n```"}, {"role": "user", "content": FEEDBACK})


def trajectory(task_id: str = "Math/add", t0: float = T0) -> TaskResult:
    """The task result the module's docstring tells, its first call at `t0` (seconds since the epoch)."""
    task = discover()[task_id]
    wrong = EvalRecord(task=task.id, task_version=1, status=Status.MISMATCH, reason="case 0: 3 of 8 differ",
                       label="round0/cand0", cases_total=4, wall_s=2.0)  # fmt: skip
    right = EvalRecord(task=task.id, task_version=1, status=Status.OK, label="round1/cand0", cases_total=4,
                       cases_passed=4, timed=True, speedup=2.0, runtime_ms=0.5, baseline_ms=1.0, shapes=(timed_shape(),),
                       wall_s=3.0)  # fmt: skip
    broken = EvalRecord(task=task.id, task_version=1, status=Status.HARNESS_ERROR, reason="judge died", label="round1/cand1",
                        wall_s=1.0)  # fmt: skip
    calls = [
        LoggedCall(0, call("generator", "```python\na = 1\n```", t0, tries=(Try(t0, 0.5, "InternalServerError: 500"),
                                                                            Try(t0 + 1.5, 2.0)), task_id=task_id), "cand0"),
        LoggedCall(0, call("judge", '{"fusion": 1}', t0 + 4.0, cached=True, cost=0.002, task_id=task_id)),
        LoggedCall(1, call("reflector", "", t0 + 7.0, tries=(Try(t0 + 7.0, 0.1, "BadRequestError: no"),),
                           error="BadRequestError: no", task_id=task_id)),
        LoggedCall(1, call("generator", "```python\nb = 2\n```", t0 + 7.5, tries=(Try(t0 + 7.5, 1.0),), task_id=task_id,
                           history=REFINE), "cand0"),
        LoggedCall(1, call("generator", "```python\nc = 3\n```", t0 + 7.5, tries=(Try(t0 + 7.5, 1.2),), sample=1, task_id=task_id), "cand1"),
    ]  # fmt: skip
    judged = [Judged(0, wrong, "a = 1", t0 + 4.5), Judged(1, right, "b = 2", t0 + 9.0), Judged(1, broken, "c = 3", t0 + 9.0)]
    return TaskResult(task, judged, calls)
