"""The stored-predictions reader and code extraction, on the shared GEAK corpus and hand-made files."""

from __future__ import annotations

import json

import pytest

from kbx.core.source import HARNESS_SEPARATOR_LEN, check_syntax, extract_code
from kbx.methods.base import MethodError
from kbx.methods.predictions import PredictionsMethod, read_predictions
from kbx.tasks import discover
from tests.conftest import CORPUS


@pytest.mark.skipif(not CORPUS.is_file(), reason="shared corpus not present")
def test_reads_the_geak_corpus_and_reports_unknown_tasks():
    lines = read_predictions(CORPUS)
    assert len(lines) == 120
    assert {line.round for line in lines} == {0, 1, 2}
    assert all(HARNESS_SEPARATOR_LEN * "#" not in line.code for line in lines)
    method = PredictionsMethod(lines)
    messages = method.report_unknown(set(discover()))
    assert any("Broadcast/" in m for m in messages)
    assert all(m.startswith("line ") and "unknown task" in m for m in messages)


@pytest.mark.skipif(not CORPUS.is_file(), reason="shared corpus not present")
def test_collapsed_corpus_records_are_syntax_errors():
    """11 corpus records lost their line breaks upstream; they must not parse (NOTICE.md)."""
    broken = [line for line in read_predictions(CORPUS) if line.code and check_syntax(line.code)]
    assert {line.task for line in broken} >= {"Math/erf", "Math/mul_int8"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"file": "Math/add.py", "predict": "x"}\nnot json\n', ":2: not valid JSON"),
        ('[1, 2]\n', ":1: expected a JSON object"),
        ('{"file": "Math/add.py"}\n', ":1: missing string field 'predict'"),
        ('{"predict": "x"}\n', ":1: needs 'file'"),
        ('{"task": "Math/add", "predict": "x", "round": -1}\n', ":1: 'round' must be"),
    ],
)
def test_malformed_lines_name_their_line(tmp_path, content, message):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    with pytest.raises(MethodError, match=message):
        read_predictions(path)


def test_task_and_round_fields(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [{"task": "Math/add", "predict": "a = 1", "round": 1, "extra": True},
            {"file": "data/kernelbenchx/Math/add.py", "predict": "b = 2"}]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    lines = read_predictions(path)
    assert [(line.line, line.task, line.round) for line in lines] == [(1, "Math/add", 1), (2, "Math/add", 0)]


def test_extract_code_takes_last_python_fence_and_drops_harness():
    text = "draft:\n```python\nx = 1\n```\nfinal:\n```python\ny = 2\n" + "#" * 146 + "\nharness()\n```\n"
    assert extract_code(text) == "y = 2\n"
    assert extract_code("plain = 3\n") == "plain = 3\n"
    assert extract_code("   \n") == ""


def test_check_syntax_compiles_without_running_and_never_raises():
    assert check_syntax("x = 1\n") == ""
    assert check_syntax("import os\nos._exit(3)\n") == ""  # compiled, not run: this process goes on
    assert check_syntax("def f(:\n").startswith("line 1:")
    assert check_syntax("return 1\n") == "line 1: 'return' outside function"  # a compile-time error
    assert check_syntax("(" * 100_000) != ""  # absurd nesting is a verdict, not an exception


def test_empty_predictions_file_needs_allow_empty(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(MethodError, match="holds no predictions"):
        read_predictions(path)
    assert read_predictions(path, allow_empty=True) == []


def test_undecodable_line_names_its_number(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"task": "Math/add", "predict": "x"}\n{"task": "Math/add", "predict": "caf\xe9"}\n')
    with pytest.raises(MethodError, match=r"p\.jsonl:2: not UTF-8 text \(byte 0xe9 at column 37\)"):
        read_predictions(path)
