"""A quiet GPU means quiet (GPU only): a candidate's background GPU work - a thread on a side
stream, a child process - never changes the verdict or the speedup of the attempts beside it,
because every other process is frozen while one is timed (kbx.eval.scheduler); and the
candidate's own hidden work fails it, not its neighbours."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kbx.eval.evaluator import Attempt, EvalSettings, Evaluator
from kbx.eval.record import Status
from kbx.tasks import discover

HONEST = ("Activation/relu", "Math/add", "Activation/sigmoid")
SPEEDUP_TOLERANCE = 0.05  # the repeatability goal (p95 of |delta|) for the same kernel timed twice
BUSY_MATMUL = 8192  # square fp32 matmuls: ~10 ms each on an H100, launched back to back forever

THREAD = f"""
import threading as _threading

def _busy():
    import torch as _t
    side = _t.cuda.Stream()
    a = _t.randn({BUSY_MATMUL}, {BUSY_MATMUL}, device="cuda")
    while True:
        with _t.cuda.stream(side):
            a @ a
        side.synchronize()

_threading.Thread(target=_busy, daemon=True).start()
"""

CHILD = f"""
import subprocess as _sp, sys as _sys

_sp.Popen([_sys.executable, "-c", "import torch\\na = torch.randn({BUSY_MATMUL}, {BUSY_MATMUL}, device='cuda')\\n"
           "while True:\\n    (a @ a).sum().item()"])
"""

# A fresh thread per call that launches the kernel's second half on a side stream and is not
# joined: the work ends after the entry returns, on another thread (the device-wide sync keeps the
# output right).
THREAD_PER_CALL = """
import threading as _threading

_inner = gelu

def gelu(*args, **kwargs):
    import torch as _t
    out = _inner(*args, **kwargs)
    side = _t.cuda.Stream()
    def _late():
        with _t.cuda.stream(side):
            _t.cuda._sleep(20_000_000)
    _threading.Thread(target=_late).start()
    return out
"""


def _expert(tasks, task_id: str) -> Attempt:
    task = tasks[task_id]
    return Attempt(task, Path(task.expert_path).read_text(), "honest")


@pytest.mark.gpu
@pytest.mark.serial
def test_background_gpu_work_never_touches_a_neighbours_verdict():
    tasks = discover()
    honest = [_expert(tasks, t) for t in HONEST]
    gelu = _expert(tasks, "Activation/gelu")
    noisy = {"thread": gelu.code + THREAD, "child process": gelu.code + CHILD,
             "thread per call": gelu.code + THREAD_PER_CALL}  # fmt: skip
    with Evaluator(EvalSettings(device="cuda", workers=4)) as ev:
        clean = ev.evaluate(honest)
        assert all(r.status is Status.OK for r in clean), [(r.task, r.status.value, r.reason) for r in clean]
        for name, code in noisy.items():
            first, *beside = ev.evaluate([Attempt(gelu.task, code, name), *honest])
            for rec, ref in zip(beside, clean, strict=True):
                assert rec.status is Status.OK, f"{name}: {rec.task} {rec.status.value}: {rec.reason}"
                change = abs(math.log(rec.speedup / ref.speedup))
                assert change <= SPEEDUP_TOLERANCE, f"{name}: {rec.task} {ref.speedup:.3f}x -> {rec.speedup:.3f}x"
            if name == "child process":
                # frozen with the rest of its tree whenever anyone is timed, itself included
                assert first.status is Status.OK, f"{name}: {first.status.value}: {first.reason}"
            else:
                assert first.status is Status.HIDDEN_WORK, f"{name}: {first.status.value}: {first.reason}"
                assert not first.correct
