"""The tail of an honest TF32 kernel's error over many seeds of a case: `python -m kbx.quality audit --tail N`.

The audit judges a TF32 kernel at one seed per case; a suite run draws a secret seed, so a tolerance
that passes the audit can still fail an honest kernel on a few seeds in a hundred. This draws N seeds
of each random case and gives, per case, the largest |error| / the judge's allowance of each seed:
median, p99, max, and how many seeds exceed 1 (each such seed a verdict that is not the kernel's).

Models of the TF32 kernel (`--tail-model`):
- exact: the reference with every fp32 matrix product and convolution on operands rounded to nearest
  TF32 (cuBLAS's rounding; kbx.quality.audit.run_tf32), on the CPU;
- truncating: the same with the operands truncated to TF32, as Triton's tl.dot does on NVIDIA GPUs
  (on an H200 the conv experts' failing elements matched this model, not the rounding one:
  docs/BENCHMARKS.md, "Tolerances");
- expert (a GPU): the task's own expert kernel, which the models stand for.
Each is judged as the judge rules: by the task's own check where it has one, else elementwise.
"""

from __future__ import annotations

import dataclasses
import math

from kbx.contract.compare import allowance
from kbx.quality.audit import round_to_tf32, run_reference, run_tf32, truncate_to_tf32
from kbx.tasks import identities
from kbx.tasks.inputs import make_generator
from kbx.tasks.registry import expert_entry
from kbx.tasks.spec import FIXED, Case, TaskInfo

MODELS = ("exact", "truncating", "expert")
TAIL_QUANTILE = 0.99  # the tail figure printed beside the median and the max


@dataclasses.dataclass(frozen=True)
class Tail:
    task: str
    case: str
    seeds: int
    median: float
    p99: float
    worst: float
    over: int  # seeds whose worst element exceeds the allowance

    def line(self) -> str:
        return (f"{self.task} {self.case}: max error / allowance over {self.seeds} seeds: median {self.median:.3f}, "
                f"p99 {self.p99:.3f}, max {self.worst:.3f}; seeds over 1: {self.over}")  # fmt: skip


def cases_of(info: TaskInfo, name: str) -> list[Case]:
    """The task's random cases (a fixed case has one input, so no tail), or the one named `name`."""
    return [c for c in info.spec.cases if c.kind != FIXED and name in ("all", c.name)]


def tail(info: TaskInfo, case: Case, seeds: int, model: str) -> Tail:
    ratios = sorted(seed_ratio(info, case, seed, model) for seed in range(seeds))
    n = len(ratios)
    return Tail(info.id, case.name, n, ratios[n // 2], ratios[int(n * TAIL_QUANTILE)], ratios[-1],
                sum(r > 1 for r in ratios))  # fmt: skip


def seed_ratio(info: TaskInfo, case: Case, seed: int, model: str) -> float:
    if model == "expert":
        call = info.spec.make_inputs(case.params, make_generator(seed, "cuda"), "cuda")
        return judged_ratio(info, case, seed, "cuda", _expert(info)(*call.args, **call.kwargs))
    rounding = truncate_to_tf32 if model == "truncating" else round_to_tf32
    return judged_ratio(info, case, seed, "cpu", run_tf32(info, case, seed, "cpu", rounding))


def judged_ratio(info: TaskInfo, case: Case, seed: int, device: str, got) -> float:
    """The largest |error| / allowance of `got` against the reference on `device`: through the task's
    own check where it has one (a bound from the terms' size measures a ratio; a statistical check
    that accepts without measuring is 0; one that rejects is inf), else elementwise."""
    expected = run_reference(info, case, seed, device)
    if info.spec.stochastic is not None:
        call = info.spec.make_inputs(case.params, make_generator(seed, device), device)
        with identities.measured() as seen, identities.scaled(math.inf):
            reason = info.spec.stochastic(call, got)
        if reason:
            return math.inf
        if seen:
            return max(m.ratio for m in seen)
        if reason == "":
            return 0.0
    bound = allowance(expected, info.spec.tolerance, "float32")
    return float(((got.double() - expected.double()).abs() / bound).max())


_EXPERTS: dict = {}  # task id -> its expert function, loaded once per process


def _expert(info: TaskInfo):
    if info.id not in _EXPERTS:
        _EXPERTS[info.id] = expert_entry(info)
    return _EXPERTS[info.id]


def run_tails(tasks: list[TaskInfo], seeds: int, model: str, case_name: str) -> list[Tail]:
    """Every selected case's tail, each printed as it is done."""
    out = []
    for info in tasks:
        for case in cases_of(info, case_name):
            out.append(tail(info, case, seeds, model))
            print(out[-1].line(), flush=True)
    return out
