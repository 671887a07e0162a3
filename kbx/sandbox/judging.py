"""Turning a worker's saved outputs into a verdict. Runs in the trusted judge process.

The judge regenerates every input from its seed, computes the reference itself, and reads the
candidate's outputs as data (`torch.load(weights_only=True)`), so nothing the candidate did in its
own process can change the reference or the rules.
"""

from __future__ import annotations

import dataclasses

import torch

from kbx.contract.compare import EXCEPTION_KEY, PASS, Outcome, compare, structure_matches
from kbx.core.record import Mismatch, Status
from kbx.tasks.spec import TaskInfo

# Errors that are limits of the Triton CPU interpreter, not of the kernel: it runs no autotuner (no
# active driver), no libdevice function and no fp16 tl.math.erf, all of which a GPU compiles
# (docs/DEPENDENCIES.md, "The Triton CPU interpreter").
INTERPRETER_LIMITS = (
    "0 active drivers",  # @triton.autotune
    "Did you forget to add @triton.jit",  # libdevice functions
    "cannot convert None",
    "Expected dtype ['fp32', 'fp64']",  # fp16 tl.math.erf
    "libdevice",
    "only 0-dimensional arrays can be converted",  # tl.dot loops with numpy >= 2.4 on triton 3.6
    # Kernels (or the torch paths they call) that demand a CUDA device cannot be judged on a CPU.
    "Torch not compiled with CUDA enabled",
    "Expected a cuda device",
    "must be on GPU",
    "must be on CUDA",
    "not implemented on the CPU",
    "Found no NVIDIA driver",
)
# A perf shape's error row (kbx.sandbox.timing), by the exception's name, when it is not a runtime error.
PERF_ERROR_STATUSES = {"OutOfMemoryError": Status.OUT_OF_MEMORY, "ForeignOutput": Status.WRONG_TYPE}
BF16_ON_CPU = "bf16 arithmetic is unreliable under the Triton CPU interpreter; judge this on a GPU"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """`cases_total`/`cases_passed` count every planned (case, seed), extras included; the status
    comes from the contract's cases alone, and kbx's extra cases that failed are counted in
    `extra_cases_failed`, the first one's reason in `extra_reason` (Case.extra)."""

    status: Status
    reason: str = ""
    error_type: str = ""
    message: str = ""
    cases_total: int = 0
    cases_passed: int = 0
    mismatch: Mismatch = dataclasses.field(default_factory=Mismatch)
    extra_cases_failed: int = 0
    extra_reason: str = ""

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["status"] = self.status.value
        return out


# Verdict fields an EvalRecord takes over as they are (the evaluator adds status, reason and mismatch).


def judge_outputs(info: TaskInfo, payload: dict, seeds: dict[str, list[int]], device: str, expected_for) -> Verdict:
    """Verdict over every planned (case, seed); the first failing contract case decides the status.

    A case marked `extra` (beyond the upstream task's contract) never decides it: its failures are
    reported apart, so kbx's own stricter cases cannot turn a verdict upstream's contract would give.
    `expected_for(case, seed)` returns the reference output (cached by the caller);
    `seeds` maps each planned case name to its seeds, in plan order.
    """
    results = {(r["case"], int(r["seed"])): r for r in payload.get("results", [])}
    cases = {c.name: c for c in info.all_cases()}
    plan = [(cases[name], seed) for name, case_seeds in seeds.items() for seed in case_seeds]
    contract = [(case, seed) for case, seed in plan if not case.extra]
    extras = [(case, seed) for case, seed in plan if case.extra]
    passed, failure = _judge_plan(info, contract, results, device, expected_for)
    extra_passed, extra_failure = _judge_plan(info, extras, results, device, expected_for)
    apart = {"cases_total": len(plan), "cases_passed": passed + extra_passed,
             "extra_cases_failed": len(extras) - extra_passed,
             "extra_reason": _failure_reason(extra_failure) if extra_failure else ""}  # fmt: skip
    if failure:
        outcome, error, case, seed = failure
        mismatch = dataclasses.replace(outcome.mismatch, case=case.name, seed=seed)
        return Verdict(outcome.status, _failure_reason(failure), error.get("type", ""), error.get("message", ""),
                       mismatch=mismatch, **apart)  # fmt: skip
    contract_keys = {(case.name, seed) for case, seed in contract}
    if sum(int(r.get("launches", 0)) for key, r in results.items() if key in contract_keys) == 0:
        return Verdict(Status.NO_TRITON, "the entry ran without launching any Triton kernel", **apart)
    ghost = payload.get("ghost") or {}
    if ghost and _ghost_still_right(info, ghost, device, expected_for):
        return Verdict(Status.DECOY_KERNEL, f"case {ghost['case']}: the output is still right with every Triton "
                       "launch disabled, so the kernel does not compute it", **apart)  # fmt: skip
    return Verdict(Status.OK, **apart)


def _judge_plan(info: TaskInfo, plan, results: dict, device: str, expected_for) -> tuple[int, tuple | None]:
    """How many of `plan`'s (case, seed) pass, and the first failure: (outcome, error, case, seed)."""
    passed, failure = 0, None
    for case, seed in plan:
        outcome, error = _judge_case(info, case, seed, results.get((case.name, seed)), device, expected_for)
        if outcome.ok:
            passed += 1
        elif failure is None:
            failure = (outcome, error, case, seed)
    return passed, failure


def _failure_reason(failure: tuple) -> str:
    outcome, _, case, seed = failure
    return f"case {case.name} (seed {seed}): {outcome.reason}"


def judge_perf_outputs(info: TaskInfo, payload: dict, rows: list[dict], device: str, expected_for) -> Verdict:
    """Re-check, at every perf shape, the output of the timed call the worker kept: its fastest repetition,
    copied when it returned, on inputs of a seed drawn for that call (kbx.sandbox.timing). Speed only counts
    when correct, and only when Triton computed it (the launch check of the cases, again at each perf shape)."""
    cases = {c.name: c for c in info.spec.perf}
    for row in rows:
        if not row.get("ok"):
            error_type = row.get("error", "").split(":")[0]
            status = PERF_ERROR_STATUSES.get(error_type, Status.RUNTIME_ERROR)
            return Verdict(status, f"perf shape {row['shape']}: {row.get('error', 'failed')}", error_type=error_type)
        if row["prepare_launches"] == 0:
            return Verdict(Status.NO_TRITON, f"perf shape {row['shape']}: the entry launched no Triton kernel there, "
                           "so its time is not a Triton kernel's")  # fmt: skip
        saved = payload.get(row["shape"])
        if saved is None:
            return Verdict(Status.MISMATCH, f"perf shape {row['shape']}: the timed output was not saved")
        case, seed = cases[row["shape"]], int(saved["seed"])
        outcome = _judge_values(info, case, seed, expected_for(case, seed), _to_device(saved["output"], device), device)
        if not outcome.ok:
            mismatch = dataclasses.replace(outcome.mismatch, case=case.name, seed=seed)
            return Verdict(outcome.status, f"perf shape {case.name}, its fastest timed call (inputs of seed {seed}): "
                           f"{outcome.reason}", mismatch=mismatch)  # fmt: skip
    return Verdict(Status.OK)


def _judge_case(info: TaskInfo, case, seed: int, result, device: str, expected_for) -> tuple[Outcome, dict]:
    if result is None:
        return Outcome(Status.RUNTIME_ERROR, "not run: an earlier case failed"), {}
    expected = expected_for(case, seed)
    error = result.get("error") or {}
    if error:
        if isinstance(expected, dict) and expected.get(EXCEPTION_KEY) == error["type"]:
            return PASS, {}
        return Outcome(_error_status(error, device), f"raised {error['type']}"), error
    if result.get("wrong_type"):
        return Outcome(Status.WRONG_TYPE, f"returned a {result['wrong_type']}, not a plain torch.Tensor"), {}
    if result.get("mutated"):
        return Outcome(Status.INPUT_MUTATED, f"{result['mutated']} was modified; the op must not write its inputs"), {}
    got = _to_device(result["output"], device)
    outcome = _judge_values(info, case, seed, expected, got, device)
    if not outcome.ok and torch.device(device).type == "cpu" and "bfloat16" in info.spec.dtypes:
        return Outcome(Status.UNSUPPORTED_ON_CPU, BF16_ON_CPU, outcome.mismatch), {}
    return outcome, {}


def _judge_values(info: TaskInfo, case, seed: int, expected, got, device: str) -> Outcome:
    spec = info.spec
    if spec.stochastic is not None and not (isinstance(expected, dict) and EXCEPTION_KEY in expected):
        from kbx.tasks.inputs import make_generator

        shape = structure_matches(expected, got)  # first, so the task's check only ever sees well-formed output
        if not shape.ok:
            return shape
        call = spec.make_inputs(case.params, make_generator(seed, device), device)
        reason = spec.stochastic(call, got)
        if reason is not None:
            return PASS if reason == "" else Outcome(Status.MISMATCH, f"rejected by the task's output check: {reason}")
    return compare(expected, got, spec.tolerance)


def _error_status(error: dict, device: str) -> Status:
    if error.get("oom"):
        return Status.OUT_OF_MEMORY
    if torch.device(device).type == "cpu" and any(sig in error.get("message", "") for sig in INTERPRETER_LIMITS):
        return Status.UNSUPPORTED_ON_CPU
    return Status.RUNTIME_ERROR


def _ghost_still_right(info: TaskInfo, ghost: dict, device: str, expected_for) -> bool:
    """Whether the Triton-free replay on fresh inputs still produced the reference's answer."""
    case = next(c for c in info.all_cases() if c.name == ghost["case"])
    seed = int(ghost["seed"])
    expected = expected_for(case, seed)
    got = ghost["output"]
    if isinstance(got, dict) and EXCEPTION_KEY in got:
        return False
    if _all_empty(expected):
        return False  # nothing to compute, nothing to prove
    return _judge_values(info, case, seed, expected, _to_device(got, device), device).ok


def _all_empty(value) -> bool:
    if isinstance(value, torch.Tensor):
        return value.numel() == 0
    if isinstance(value, (list, tuple)):
        return all(_all_empty(v) for v in value)
    return not isinstance(value, dict)


def _to_device(value, device: str):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value
