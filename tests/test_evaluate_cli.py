"""`python -m kbx.evaluate`: stored predictions judged without Hydra or MLflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.e2e


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
