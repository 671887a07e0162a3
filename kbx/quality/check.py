"""Self-check of the task suite: every reference on every case, on the CPU.

For each case and seed: inputs build, the reference runs, and a second run on regenerated
inputs gives bit-identical output (a nondeterministic reference would make every verdict
noise). Stochastic tasks instead must accept their own reference's output. Outputs that are
entirely NaN are rejected (upstream's rsqrt reference once was). With `perf`, perf shapes are
built and run once and their FLOP and byte models must be positive (GPU-sized, so slow on a CPU).
"""

from __future__ import annotations

import dataclasses
import math
import time

import torch

from kbx.tasks.inputs import make_generator
from kbx.tasks.spec import FIXED, TaskInfo

CHECK_SEEDS = (0, 1)
DEVICE = "cpu"


@dataclasses.dataclass(frozen=True)
class CheckResult:
    task: str
    ok: bool
    problems: tuple[str, ...]
    cases: int
    slowest_case: str
    slowest_s: float
    total_s: float


def check_task(info: TaskInfo, perf: bool = False) -> CheckResult:
    from kbx.contract.compare import EXCEPTION_KEY
    from kbx.sandbox.cases import bitwise_equal, to_plain

    spec, problems, timings = info.spec, [], []
    started = time.perf_counter()
    for case in spec.cases:
        for seed in CHECK_SEEDS[:1] if case.kind == FIXED else CHECK_SEEDS:
            t0 = time.perf_counter()
            try:
                first = to_plain(_run(spec, case, seed))
                second = to_plain(_run(spec, case, seed))
            except Exception as exc:  # a reference may raise by design (compared by type); record it
                first = second = {EXCEPTION_KEY: type(exc).__name__}
            timings.append((f"{case.name}/{seed}", time.perf_counter() - t0))
            problems += _output_problems(info, case, seed, first, second, bitwise_equal)
    if perf:
        for case in spec.perf:
            t0 = time.perf_counter()
            try:
                call = spec.make_inputs(case.params, make_generator(0, DEVICE), DEVICE)
                with torch.no_grad():
                    spec.reference(*call.args, **call.kwargs)
                flops, nbytes = spec.flops(*call.args, **call.kwargs), spec.bytes(*call.args, **call.kwargs)
                if not (flops >= 0 and nbytes > 0 and math.isfinite(flops) and math.isfinite(nbytes)):
                    problems.append(f"perf {case.name}: flops={flops} bytes={nbytes} (need flops>=0, bytes>0)")
            except Exception as exc:
                problems.append(f"perf {case.name}: {type(exc).__name__}: {exc}")
            timings.append((f"perf/{case.name}", time.perf_counter() - t0))
    slowest = max(timings, key=lambda t: t[1]) if timings else ("", 0.0)
    return CheckResult(info.id, not problems, tuple(problems), len(timings), slowest[0], slowest[1],
                       time.perf_counter() - started)  # fmt: skip


def _run(spec, case, seed):
    """The reference's output as the judge sees it (for an in-place op, with the updated inputs)."""
    from kbx.sandbox.cases import with_state

    call = spec.make_inputs(case.params, make_generator(seed, DEVICE), DEVICE)
    with torch.no_grad():
        out = spec.reference(*call.args, **call.kwargs)
    return with_state(out, call.args, call.kwargs) if spec.inplace else out


def _output_problems(info, case, seed, first, second, bitwise_equal) -> list[str]:
    from kbx.contract.compare import EXCEPTION_KEY

    where = f"case {case.name} seed {seed}"
    if isinstance(first, dict) and EXCEPTION_KEY in first:
        return []
    if info.spec.stochastic is not None:
        call = info.spec.make_inputs(case.params, make_generator(seed, DEVICE), DEVICE)
        verdict = info.spec.stochastic(call, first)
        if verdict:
            return [f"{where}: the reference's own output fails the stochastic check: {verdict}"]
        if verdict == "":
            return []
    problems = []
    if not _same(first, second, bitwise_equal):
        problems.append(f"{where}: reference is not deterministic (two runs differ)")
    if _all_nan(first):
        problems.append(f"{where}: reference output is entirely NaN")
    return problems


def _same(a, b, bitwise_equal) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return bitwise_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, bitwise_equal) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _all_nan(value) -> bool:
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()) and value.numel():
        return bool(torch.isnan(value).all())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_all_nan(v) for v in value)
    return False
