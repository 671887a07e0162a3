"""`python -m kbx.evaluate`: stored predictions judged without Hydra or MLflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, ctrl_c_once

pytestmark = pytest.mark.e2e


def torch_cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def test_one_record_per_line_in_order(kbx_cli, tmp_path):
    expert = (REPO / "tasks" / "Math" / "add" / "expert.py").read_text()
    lines = [
        {"file": "Math/add.py", "predict": f"```python\n{expert}```", "model": "ignored field"},
        {"task": "Broadcast/expand", "predict": "x = 1"},
        {"task": "Math/add", "predict": "", "round": 2},
        {"task": "Math/add", "predict": "import torch\ndef add(input, other, alpha=1, out=None):\n"
                                        "    return torch.add(input, other, alpha=alpha)\n"},
    ]  # fmt: skip
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "records.json"
    code, _, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "cpu", "--json", str(out))
    assert code == 0, err[-2000:]
    records = json.loads(out.read_text())
    assert [(r["line"], r["task"], r["status"]) for r in records] == [
        (1, "Math/add", "ok"), (2, "Broadcast/expand", "unknown_task"), (3, "Math/add", "no_code"),
        (4, "Math/add", "no_triton")]  # fmt: skip
    assert records[2]["round"] == 2
    for r in records:
        assert {"line", "task", "status", "compiled", "correct", "speedup", "reason"} <= set(r)
        assert r["speedup"] is None  # not timed on a CPU
    assert records[0]["compiled"] and records[0]["correct"] and not records[3]["correct"]


def test_malformed_file_is_one_line_error_and_writes_nothing(kbx_cli, tmp_path):
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"task": "Math/add", "predict": "x"}\n{oops\n')
    out = tmp_path / "records.json"
    code, _, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "cpu", "--json", str(out))
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("kbx.evaluate: error:") and ":2: not valid JSON" in err
    assert not out.exists() and not Path(str(out) + ".tmp").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"task": "Math/add", "predict": "x"}\n\xff\xfe{"task": 1}\n', "p.jsonl:2: not UTF-8 text (byte 0xff at column 1)"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\n", "p.jsonl:1: binary content (a NUL byte at column 8)"),
        (b"", "holds no predictions (empty file); allow that with --allow-empty"),
        (b"\n  \n", "holds no predictions"),
    ],
    ids=["not-utf8", "binary", "empty", "blank"],
)
def test_unreadable_or_empty_file_is_one_line_error(kbx_cli, tmp_path, content, message):
    preds = tmp_path / "p.jsonl"
    preds.write_bytes(content)
    code, out, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "cpu")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kbx.evaluate: error: {preds}")
    assert message.removeprefix("p.jsonl") in lines[0]


def test_empty_file_is_allowed_with_a_flag(kbx_cli, tmp_path):
    preds = tmp_path / "p.jsonl"
    preds.write_text("")
    code, out, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "cpu", "--allow-empty")
    assert code == 0 and json.loads(out) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "/missing/dir/out.json"], "--json /missing/dir/out.json: directory /missing/dir does not exist"),
        (["--timeout", "-1"], "--timeout must be a positive number of seconds, got -1"),
        (["--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
        (["--workers", "0"], "--workers must be a positive integer, got 0"),
    ],
)
def test_bad_arguments_fail_before_any_work(kbx_cli, tmp_path, args, message):
    preds = tmp_path / "p.jsonl"
    expert = (REPO / "tasks" / "Math" / "add" / "expert.py").read_text()
    preds.write_text(json.dumps({"task": "Math/add", "predict": expert}) + "\n")
    code, out, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "cpu", *args)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"kbx.evaluate: error: {message}"]


@pytest.mark.skipif(torch_cuda_available(), reason="needs a machine without an H100")
def test_missing_gpu_names_this_commands_own_options(kbx_cli, tmp_path):
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"task": "Nope/thing", "predict": "x"}\n')
    code, out, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "h100")
    assert code == 2
    assert "--hardware h100 was requested" in err and "--force" in err and "hardware.force" not in err
    code, out, err = kbx_cli("kbx.evaluate", str(preds), "--hardware", "h100", "--force")
    assert code == 0 and [r["status"] for r in json.loads(out)] == ["unknown_task"]


def test_ctrl_c_keeps_finished_records_and_exits_at_once(tmp_path):
    """One honest kernel and one that spins: Ctrl-C once the first is judged exits within seconds,
    with the finished record in the output file and one line saying so."""
    expert = (REPO / "tasks" / "Math" / "add" / "expert.py").read_text()
    spin = "import triton\ndef add(input, other, alpha=1, out=None):\n    while True:\n        pass\n"
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps({"task": "Math/add", "predict": c}) for c in (expert, spin)) + "\n")
    out = tmp_path / "records.json"
    code, exit_s, err = ctrl_c_once(["kbx.evaluate", str(preds), "--hardware", "cpu", "--json", str(out), "--timeout",
                                     "600"], lambda: _records(out))  # fmt: skip
    assert code == 130 and exit_s < 10, (code, exit_s)  # about 1 s (docs/BENCHMARKS.md)
    assert err.strip().splitlines()[-1] == f"kbx.evaluate: interrupted: 1 of 2 records kept (in {out})"
    assert "Traceback" not in err
    assert [(r["line"], r["status"]) for r in _records(out)] == [(1, "ok")]


def _records(path: Path) -> list:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return []
