"""`make test`'s pytest-xdist schedule (tests/xdist_schedule.py): what leaves its file, and the order units go out."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

pytest.importorskip("xdist")

from tests.xdist_schedule import EXPERT_TESTS, LONG, UNITS, start_order, unit_of  # noqa: E402


def test_units_files_and_own_tests():
    assert unit_of("tests/tasks/test_tasks.py::test_reference_self_check[Math/add]") == "tests/tasks/test_tasks.py"
    e2e = "tests/analysis/test_analysis_e2e.py"
    corpus = [f"{e2e}::test_corpus_{n}" for n in ("run_judges_every_line_kbx_has", "x")]
    assert {unit_of(n) for n in corpus} == {f"{e2e}::test_corpus_"}  # one fixture, one unit
    assert unit_of(f"{e2e}::test_report_writes_every_file") == e2e
    assert unit_of(f"{EXPERT_TESTS}Math/add]") == unit_of(f"{EXPERT_TESTS}Math/sub]") == f"{EXPERT_TESTS}Math/"
    assert unit_of(f"{EXPERT_TESTS}Fusion/fused_add_gelu]") == f"{EXPERT_TESTS}Fusion/"
    static = "tests/experts/test_experts.py::test_expert_jit_reads_only_constexpr_globals[Math/add]"
    assert unit_of(static) == "tests/experts/test_experts.py"


def test_long_units_in_turn_with_expert_categories_then_files_by_size():
    units = {f"{EXPERT_TESTS}Math/": 38, "tests/test_small.py": 3, "tests/test_big.py": 40, LONG[3]: 5,
             f"{EXPERT_TESTS}Fusion/": 60, LONG[1]: 1, LONG[0]: 5, f"{EXPERT_TESTS}Random/": 2}  # fmt: skip
    assert start_order(units) == [LONG[0], f"{EXPERT_TESTS}Fusion/", LONG[1], f"{EXPERT_TESTS}Math/", LONG[3],
                                  f"{EXPERT_TESTS}Random/", "tests/test_big.py", "tests/test_small.py"]  # fmt: skip


def test_every_named_unit_is_a_test():
    """A renamed test would silently fall back into its file (and start late): each name must still match."""
    for prefix in (*UNITS, *LONG, EXPERT_TESTS):
        path, _, name = prefix.partition("::")
        tree = ast.parse((REPO / path).read_text())  # a renamed file fails here
        tests = [f.name for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")]
        assert any(t.startswith(name.rstrip("[")) for t in tests), prefix
