"""On a CPU: which of a task's case calls run a graph compiled by method=inductor's generated module.

Why: on an H200 (2026-12-06, docs/BENCHMARKS.md) elementwise fusions under method=inductor counted fewer
Triton launches than cases and none at their first perf shape. Dynamo runs a function eagerly for good once
a call of it is converted without a graph (one that raised, one without tensors). This replays the worker's
plan (every case; a random one with two seeds, as with the public and the secret seed; then the first perf
shape) through the proposal's module, with a backend that counts executions of compiled graphs instead of
Inductor (which writes C++ on a CPU), with the module as it is and with its Dynamo reset taken out.

    PYTHONPATH=. python3 scripts/inductor_case_replay.py TASK_ID [TASK_ID ...]
"""

from __future__ import annotations

import sys

import torch

from kbx.methods.inductor import build
from kbx.tasks import discover
from kbx.tasks.inputs import make_generator
from kbx.tasks.spec import FIXED

RANDOM_CASE_SEEDS = (0, 12345)  # the public seed and a stand-in for the secret one
RESET_LINE = "            torch.compiler.reset()"


def replay(info, code: str, runs: list) -> tuple[int, int]:
    """(calls, calls that ran a compiled graph)."""
    torch._dynamo.reset()
    scope: dict = {}
    exec(compile(code, "<proposal>", "exec"), scope)  # noqa: S102 - kbx's own template
    entry = scope[info.spec.entry]
    plan = [(c, s) for c in info.spec.cases for s in ((0,) if c.kind == FIXED else RANDOM_CASE_SEEDS)]
    plan.append((info.spec.perf[0], RANDOM_CASE_SEEDS[-1]))
    compiled_calls = 0
    for case, seed in plan:
        call = info.spec.make_inputs(case.params, make_generator(seed, "cpu"), "cpu")
        before = len(runs)
        try:
            entry(*call.args, **call.kwargs)
        except Exception:  # noqa: BLE001 - an invalid-argument case raises by design
            pass
        compiled_calls += len(runs) > before
    return len(plan), compiled_calls


def main() -> None:
    runs: list = []

    def counting_backend(gm, example_inputs):
        def run(*args):
            runs.append(gm)
            return gm.forward(*args)

        return run

    real_compile = torch.compile
    torch.compile = lambda fn, mode, dynamic: real_compile(fn, backend=counting_backend, dynamic=dynamic)
    tasks = discover()
    for task_id in sys.argv[1:]:
        info = tasks[task_id]
        code = build().propose(info, 0, [])[0].code
        if RESET_LINE not in code:
            sys.exit("kbx: error: the inductor template's reset line moved: update RESET_LINE")
        calls, without_reset = replay(info, code.replace(RESET_LINE, "            pass"), runs)
        _, with_reset = replay(info, code, runs)
        print(f"{task_id:55s} calls {calls:3d}  compiled without the reset {without_reset:3d}  with it {with_reset:3d}")


if __name__ == "__main__":
    main()
