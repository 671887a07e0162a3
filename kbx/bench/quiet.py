"""`python -m kbx.bench quiet`: whether a candidate's background GPU work changes the verdict or the
speedup of the attempts beside it, or how long they take (GPU only).

Honest expert kernels are judged alone, then beside a `gelu` that is the expert as it is, and the expert
plus background GPU work of five kinds: a thread launching large matmuls on a side stream, a child
process doing the same, a thread started on every call, and two hogs, threads that launch the matmuls
without ever waiting for them (on a side stream, on the default stream), so that seconds of work stay
queued while their process is stopped (kbx.driver.hogs). All in one evaluator, so the honest kernels'
baselines are the same in every setting and a change of speedup is their own timing's; each setting's
wall time is kept, to set beside the plain gelu's. tests/sandbox/test_quiet_gpu.py asserts on the same runs.
"""

from __future__ import annotations

import math
from pathlib import Path

HONEST = ("Activation/relu", "Math/add", "Activation/sigmoid")
NOISY_TASK = "Activation/gelu"
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

# A fresh thread per call that queues more GPU work on a side stream and is not joined: the work
# outlives the call, on another thread.
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


# Threads that launch matmuls forever and never wait for them: the launch queue stays full.
HOG_SIDE_STREAM = f"""
import threading as _threading

def _hog():
    import torch as _t
    side = _t.cuda.Stream()
    a = _t.randn({BUSY_MATMUL}, {BUSY_MATMUL}, device="cuda")
    while True:
        with _t.cuda.stream(side):
            a @ a

_threading.Thread(target=_hog, daemon=True).start()
"""

HOG_DEFAULT_STREAM = f"""
import threading as _threading

def _hog():
    import torch as _t
    a = _t.randn({BUSY_MATMUL}, {BUSY_MATMUL}, device="cuda")
    while True:
        a @ a

_threading.Thread(target=_hog, daemon=True).start()
"""

NOISE = {"nothing": "", "thread": THREAD, "child process": CHILD, "thread per call": THREAD_PER_CALL,
         "hog on a side stream": HOG_SIDE_STREAM, "hog on the default stream": HOG_DEFAULT_STREAM}  # fmt: skip
CHARGED_NOISE = ("thread", "thread per call", "hog on a side stream", "hog on the default stream")  # hidden_work
HOGS = ("hog on a side stream", "hog on the default stream")


def neighbour_runs(ev, walls: dict | None = None) -> dict:
    """{"clean": honest records alone, <noise>: [the noisy gelu's record, *honest records]}; each setting's
    wall time in seconds into `walls`, where given."""
    import time

    from kbx.contract.attempt import Attempt
    from kbx.tasks import discover

    tasks = discover()

    def expert(task_id: str, extra: str = "", label: str = "honest") -> Attempt:
        task = tasks[task_id]
        return Attempt(task, Path(task.expert_path).read_text() + extra, label, expert=True)

    honest = [expert(t) for t in HONEST]
    walls = {} if walls is None else walls
    runs = {}
    for name, attempts in [("clean", honest), *((n, [expert(NOISY_TASK, c, n), *honest]) for n, c in NOISE.items())]:
        started = time.perf_counter()
        runs[name] = ev.evaluate(attempts)
        walls[name] = time.perf_counter() - started
    return runs


def speedup_change(record, clean) -> float:
    """|log| of the speedup's ratio to the clean run's: 0.05 is a 5 % change."""
    return abs(math.log(record.speedup / clean.speedup))


def quiet_report(runs: dict, walls: dict | None = None) -> dict:
    clean = runs["clean"]
    walls = walls or {}
    out = {"clean": [{"task": r.task, "status": r.status.value, "speedup": r.speedup} for r in clean]}
    for name, (noisy, *beside) in ((k, v) for k, v in runs.items() if k != "clean"):
        out[name] = {"noisy": {"status": noisy.status.value, "reason": noisy.reason[:200]},
                     "beside": [{"task": r.task, "status": r.status.value, "speedup": r.speedup,
                                 "change_pct": 100 * speedup_change(r, c)} for r, c in zip(beside, clean, strict=True)],
                     "wall_s": walls.get(name, math.nan)}  # fmt: skip
    return out


def format_quiet_report(report: dict) -> str:
    lines = ["honest kernels alone: " + ", ".join(f"{r['task']} {r['status']} {r['speedup']:.3f}x" for r in report["clean"])]
    for name, run in ((k, v) for k, v in report.items() if k != "clean"):
        lines.append(f"beside a gelu with {name} (its own verdict: {run['noisy']['status']}, "
                     f"{run.get('wall_s', math.nan):.1f} s for the four): "
                     + ", ".join(f"{r['task']} {r['status']} {r['speedup']:.3f}x ({r['change_pct']:+.1f} %)"
                                 for r in run["beside"]))  # fmt: skip
    return "\n".join(lines)
