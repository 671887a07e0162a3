"""`python -m kbx.quality audit --tail N`: an honest TF32 kernel's error over N seeds of each random case."""

from __future__ import annotations

import dataclasses

import pytest

from kbx.quality.tail import cases_of, tail
from kbx.tasks import discover

MATMUL = "MatrixMultiply/matmul"


def test_the_tail_command_prints_each_case_and_passes_a_tolerance_with_headroom(kbx_cli):
    code, out, err = kbx_cli("kbx.quality", "audit", "--tail", "12", "--tail-model", "truncating",
                             "--task", MATMUL, "--case", "outlier")  # fmt: skip
    assert code == 0, err[-2000:]
    line = next(line for line in out.splitlines() if line.startswith(f"{MATMUL} outlier:"))
    assert "over 12 seeds" in line and line.endswith("seeds over 1: 0")
    assert "1 cases over 12 seeds each; 0 with a seed over its allowance" in out


def test_a_tolerance_too_tight_for_tf32_shows_seeds_over_the_allowance():
    """matmul's outlier case with its fp32 allowance cut to a hundredth: the TF32 error exceeds it."""
    info = discover()[MATMUL]
    tight = dataclasses.replace(info.spec.tolerance, atol={"float32": 1e-7}, rtol={"float32": 1e-7},
                                rms_atol={"float32": info.spec.tolerance.for_dtype("float32")[2] / 100})  # fmt: skip
    narrow = dataclasses.replace(info, spec=dataclasses.replace(info.spec, tolerance=tight))
    case = next(c for c in info.spec.cases if c.name == "outlier")
    honest, tight_tail = tail(info, case, 6, "truncating"), tail(narrow, case, 6, "truncating")
    assert honest.over == 0 and honest.worst < 1
    assert tight_tail.over == 6 and tight_tail.worst > 1 and tight_tail.median > honest.median


def test_the_tail_refuses_what_it_cannot_measure(kbx_cli):
    code, _, err = kbx_cli("kbx.quality", "audit", "--tail", "5", "--task", MATMUL, "--case", "no_such_case")
    assert code == 2 and "a random case" in err
    assert cases_of(discover()[MATMUL], "all") and all(c.kind != "fixed" for c in cases_of(discover()[MATMUL], "all"))


@pytest.mark.gpu
def test_the_expert_kernels_tail_stays_within_the_allowance_on_a_gpu(kbx_cli):
    code, out, err = kbx_cli("kbx.quality", "audit", "--tail", "50", "--tail-model", "expert", "--task", MATMUL)
    assert code == 0, (out[-2000:], err[-2000:])
