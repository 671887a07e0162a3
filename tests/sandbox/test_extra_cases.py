"""kbx's extra cases (Case.extra, beyond the upstream task's contract) are reported apart: they never
decide a verdict that the contract's cases give, and their failures are counted in the record."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kbx.core.record import VERDICT_FIELDS, EvalRecord, Status
from kbx.sandbox.cases import to_plain
from kbx.sandbox.judge import Judge
from kbx.sandbox.judging import judge_outputs
from kbx.tasks.registry import default_tasks_dir, load_task_id

TASK = "Activation/relu"  # its `standard_inplace` case is an extra
EXTRA = "standard_inplace"


@pytest.fixture(scope="module")
def relu():
    info = load_task_id(default_tasks_dir(), TASK)
    assert [c.name for c in info.spec.cases if c.extra] == [EXTRA]
    judge = Judge("cpu", str(default_tasks_dir()))
    seeds = {c.name: [0] for c in info.spec.cases}
    return info, seeds, (lambda case, seed: judge.expected(info, case, seed))


def payload(info, seeds, expected_for, wrong=(), launches=1, launch_cases=None) -> dict:
    """The worker's outputs file as the honest reference would leave it, with the cases in `wrong` off by 1."""
    results = []
    for case in info.spec.cases:
        for seed in seeds[case.name]:
            out = to_plain(expected_for(case, seed))
            if case.name in wrong:
                out = (out[0] + 1.0, [s + 1.0 for s in out[1]])
            ran = launch_cases is None or case.name in launch_cases
            results.append({"case": case.name, "seed": seed, "output": out, "error": None, "mutated": "",
                            "launches": launches if ran else 0, "wrong_type": ""})  # fmt: skip
    return {"results": results, "ghost": {}}


def test_a_failing_extra_case_does_not_flip_an_ok_verdict(relu):
    info, seeds, expected_for = relu
    verdict = judge_outputs(info, payload(info, seeds, expected_for, wrong={EXTRA}), seeds, "cpu", expected_for)
    assert verdict.status is Status.OK and verdict.reason == ""
    assert verdict.extra_cases_failed == 1 and verdict.extra_reason.startswith(f"case {EXTRA} (seed 0): ")
    assert (verdict.cases_total, verdict.cases_passed) == (len(info.spec.cases), len(info.spec.cases) - 1)


def test_a_failing_contract_case_decides_and_extras_are_counted_apart(relu):
    info, seeds, expected_for = relu
    verdict = judge_outputs(info, payload(info, seeds, expected_for, wrong={"standard"}), seeds, "cpu", expected_for)
    assert verdict.status is Status.MISMATCH and verdict.reason.startswith("case standard (seed 0): ")
    assert verdict.mismatch.case == "standard" and verdict.extra_cases_failed == 0 and verdict.extra_reason == ""
    both = judge_outputs(info, payload(info, seeds, expected_for, wrong={"outlier", EXTRA}), seeds, "cpu",
                         expected_for)  # fmt: skip
    assert both.status is Status.MISMATCH and both.mismatch.case == "outlier"  # the extra came first in plan order
    assert both.extra_cases_failed == 1


def test_all_right_has_no_extra_failures(relu):
    info, seeds, expected_for = relu
    verdict = judge_outputs(info, payload(info, seeds, expected_for), seeds, "cpu", expected_for)
    assert verdict.status is Status.OK and verdict.extra_cases_failed == 0
    assert verdict.cases_passed == verdict.cases_total == len(info.spec.cases)


def test_triton_launched_only_in_an_extra_case_is_no_triton(relu):
    """Whether the kernel launches Triton is judged on the contract's cases, as correctness is."""
    info, seeds, expected_for = relu
    verdict = judge_outputs(info, payload(info, seeds, expected_for, launch_cases={EXTRA}), seeds, "cpu",
                            expected_for)  # fmt: skip
    assert verdict.status is Status.NO_TRITON


def test_record_fields_carry_the_extra_counts_into_a_record(relu):
    info, seeds, expected_for = relu
    verdict = judge_outputs(info, payload(info, seeds, expected_for, wrong={EXTRA}), seeds, "cpu", expected_for)
    fields = {k: verdict.to_dict()[k] for k in VERDICT_FIELDS}
    record = EvalRecord(task=TASK, task_version=info.spec.version, status=verdict.status, **fields).to_dict()
    assert record["correct"] and record["extra_cases_failed"] == 1 and EXTRA in record["extra_reason"]
    assert set(VERDICT_FIELDS) <= {f.name for f in dataclasses.fields(EvalRecord)}


# Right on upstream's contract (relu, and inplace=True on a small fixed input), wrong on kbx's extra
# random inplace case: above 1024 elements it leaves `input` unwritten.
SMALL_ONLY_INPLACE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.where(x < 0, 0.0, x), mask=offs < n)


def relu(input, inplace=False):
    y = torch.empty_like(input)
    _relu[(triton.cdiv(input.numel(), 1024),)](input, y, input.numel(), BLOCK=1024)
    if inplace and input.numel() <= 1024:
        input.copy_(y)
        return input
    return y
'''


@pytest.mark.e2e
def test_kbx_evaluate_passes_a_kernel_that_fails_only_an_extra_case(kbx_cli, tmp_path):
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"task": TASK, "predict": SMALL_ONLY_INPLACE}) + "\n")
    out = tmp_path / "records.json"
    code, _, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "cpu", "--json", str(out))
    assert code == 0, err[-2000:]
    (record,) = json.loads(out.read_text())
    assert record["status"] == "ok" and record["correct"], record["reason"]
    assert record["cases_total"] - record["cases_passed"] == 2  # the extra case, at the public and the secret seed




def test_summary_counts_correct_tasks_that_failed_an_extra_case(relu):
    from kbx.job.summary import summarize, table
    from kbx.methods.loop import Judged, TaskResult

    info = relu[0]

    def result(status: Status, extra_failed: int) -> TaskResult:
        record = EvalRecord(task=TASK, task_version=1, status=status, extra_cases_failed=extra_failed)
        return TaskResult(info, [Judged(0, record, "")])

    results = [result(Status.OK, 1), result(Status.OK, 0), result(Status.MISMATCH, 1)]
    summary = summarize(results)
    assert summary["n_extra_failed"] == 1.0 and summary["correct_rate"] == pytest.approx(2 / 3)
    assert "1 correct tasks failed kbx's extra cases" in table(results)
