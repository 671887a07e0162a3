"""`python -m kbx.bench sandbox`: what the sandbox costs per attempt, on this machine.

Two evaluators side by side, one with `eval.sandbox=namespaces` and one with `none`, judge the same
small attempt in turn (A B A B ..., one at a time), so drift of a shared machine hits both alike.
The attempt is a Triton kernel for Activation/relu that is off by one: it runs every stage but
timing (worker, inputs, import, cases, ghost replay, judge), whose noise would hide milliseconds.
Reported: the median and spread of the paired wall-time differences, and the probe's cost.

Whole attempts vary by ±100 ms on their own (judging, the GPU), more than the sandbox costs, so
the cost is also measured where it arises: from this process, with torch and triton imported as
in the zygote, `FORK_PAIRS` pairs of a plain fork that exits against an isolated fork that enters
the sandbox and exits (namespaces torn down included), from fork to reaped exit.
"""

from __future__ import annotations

import statistics
import time

from kbx.protocol import SANDBOX_NAMESPACES, SANDBOX_NONE

TASK = "Activation/relu"
OFF_BY_ONE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _plus_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0) + 1.0, mask=mask)


def relu(input):
    x = input.contiguous()
    out = torch.empty_like(x)
    _plus_one[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
'''
WARMUP = 2  # attempts per evaluator before counting: worker pool and judges started, caches warm
FORK_PAIRS = 40


def fork_costs_ms(pairs: int = FORK_PAIRS) -> dict[str, list[float]]:
    """Fork-to-reaped-exit times of a plain worker fork and a sandboxed one, paired, from a process
    that has what the zygote has imported. Runs in a child process of its own: the forker must be
    created single-threaded, before torch starts any thread."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_fork_costs_ms, (pairs,))


def _fork_costs_ms(pairs: int) -> dict[str, list[float]]:
    import os
    import tempfile

    from kbx.sandbox import namespaces as sandbox

    forker = sandbox.IsolatedForker()
    import torch  # noqa: F401 - the zygote's address space, which every fork copies
    import triton  # noqa: F401

    import kbx.sandbox.child  # noqa: F401

    out: dict[str, list[float]] = {SANDBOX_NAMESPACES: [], SANDBOX_NONE: []}
    with tempfile.TemporaryDirectory(prefix="kbx-fork-bench-") as work:
        tasks_dir = os.path.join(work, "tasks")
        os.makedirs(tasks_dir)
        for i in range(pairs):
            for mode, fork in ((SANDBOX_NAMESPACES, forker.fork), (SANDBOX_NONE, os.fork)):
                job = {"job_dir": os.path.join(work, "jobs", f"{i}-{mode}"), "tasks_dir": tasks_dir}
                os.makedirs(job["job_dir"])
                sandbox.view_plan(job)  # as the zygote does before forking
                started = time.perf_counter()
                pid = fork()
                if pid == 0:
                    if mode == SANDBOX_NAMESPACES:
                        sandbox.enter(job, gpu=False)
                    os._exit(0)
                os.waitpid(pid, 0)
                out[mode].append(1000 * (time.perf_counter() - started))
    return out


def bench_sandbox(pairs: int) -> dict:
    import torch

    from kbx.contract.attempt import Attempt
    from kbx.driver.evaluator import EvalSettings, Evaluator
    from kbx.driver.isolation import probe_reason
    from kbx.tasks import discover

    device = "cuda" if torch.cuda.is_available() else "cpu"
    started = time.perf_counter()
    probe_reason_text = probe_reason(device == "cuda")
    probe_s = time.perf_counter() - started
    attempt = Attempt(discover()[TASK], OFF_BY_ONE, "sandbox-bench")
    walls: dict[str, list[float]] = {SANDBOX_NAMESPACES: [], SANDBOX_NONE: []}
    setup: list[float] = []
    statuses: set[str] = set()
    with Evaluator(EvalSettings(device=device, workers=1, sandbox=SANDBOX_NAMESPACES)) as boxed, \
            Evaluator(EvalSettings(device=device, workers=1, sandbox=SANDBOX_NONE)) as bare:  # fmt: skip
        for i in range(WARMUP + pairs):
            for mode, ev in ((SANDBOX_NAMESPACES, boxed), (SANDBOX_NONE, bare)):
                record = ev.evaluate_one(attempt)
                statuses.add(record.status.value)
                print(f"{'warm-up' if i < WARMUP else f'pair {i - WARMUP}'} {mode:10s} {record.status.value} "
                      f"wall {record.wall_s:.3f}s sandbox {1000 * record.sandbox_s:.1f} ms", flush=True)  # fmt: skip
                if i >= WARMUP:
                    walls[mode].append(record.wall_s)
                    if mode == SANDBOX_NAMESPACES:
                        setup.append(record.sandbox_s)
    deltas_ms = [1000 * (a - b) for a, b in zip(walls[SANDBOX_NAMESPACES], walls[SANDBOX_NONE])]
    forks = fork_costs_ms()
    fork_deltas = [a - b for a, b in zip(forks[SANDBOX_NAMESPACES], forks[SANDBOX_NONE])]
    q = statistics.quantiles(deltas_ms, n=4) if len(deltas_ms) > 1 else deltas_ms * 3
    return {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "pairs": pairs, "task": TASK,
        "statuses": sorted(statuses), "probe_reason": probe_reason_text, "probe_s": probe_s,
        "wall_ms_median": {mode: 1000 * statistics.median(w) for mode, w in walls.items()},
        "setup_ms_median": 1000 * statistics.median(setup), "setup_ms_max": 1000 * max(setup),
        "fork_ms_median": {mode: statistics.median(f) for mode, f in forks.items()},
        "fork_overhead_ms_median": statistics.median(fork_deltas), "fork_overhead_ms_max": max(fork_deltas),
        "overhead_ms_median": statistics.median(deltas_ms), "overhead_ms_q1": q[0], "overhead_ms_q3": q[2],
    }  # fmt: skip


def format_sandbox_report(report: dict) -> str:
    w = report["wall_ms_median"]
    return (f"sandbox cost on {report['device']}, {report['pairs']} paired attempts at {report['task']} "
            f"(statuses {', '.join(report['statuses'])}):\n"
            f"  attempt wall, median: namespaces {w['namespaces']:.1f} ms, none {w['none']:.1f} ms\n"
            f"  entering the sandbox (in the record's sandbox_s): median {report['setup_ms_median']:.1f} ms, "
            f"max {report['setup_ms_max']:.1f} ms\n"
            f"  fork to reaped exit, {FORK_PAIRS} pairs: namespaces {report['fork_ms_median']['namespaces']:.1f} ms, "
            f"plain {report['fork_ms_median']['none']:.1f} ms: overhead median {report['fork_overhead_ms_median']:+.1f} ms, "
            f"max {report['fork_overhead_ms_max']:+.1f} ms\n"
            f"  paired wall difference per attempt: median {report['overhead_ms_median']:+.1f} ms "
            f"(IQR {report['overhead_ms_q1']:+.1f} .. {report['overhead_ms_q3']:+.1f} ms)\n"
            f"  probe (once per process): {1000 * report['probe_s']:.0f} ms")  # fmt: skip
