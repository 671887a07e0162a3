"""tests/cpu_profile.py: each test's CPU is written as a line, and the lines sum per test file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO
from tests.cpu_profile import per_file


def test_lines_sum_per_file_most_cpu_first(tmp_path):
    rows = [("tests/a/test_x.py::t1", 1.0, 2.0, 3.0), ("tests/a/test_x.py::t2", 0.5, 0.0, 1.0),
            ("tests/b/test_y.py::t", 0.0, 9.0, 4.0)]  # fmt: skip
    for worker, part in (("gw0", rows[:1]), ("gw1", rows[1:])):
        (tmp_path / f"cpu-{worker}.jsonl").write_text("".join(
            json.dumps({"id": i, "self_cpu_s": s, "children_cpu_s": c, "wall_s": w}) + "\n" for i, s, c, w in part))
    assert per_file(tmp_path) == [("tests/b/test_y.py", 9.0, 4.0, 1), ("tests/a/test_x.py", 3.5, 4.0, 2)]


def test_the_plugin_writes_a_line_per_test_with_the_cpu_of_what_it_ran(tmp_path):
    """A test that spends about a second of CPU in a child it reaps is charged that second."""
    (tmp_path / "test_spin.py").write_text(
        "import subprocess, sys\n"
        "def test_spin():\n"
        "    subprocess.run([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
        "while time.process_time() - t < 1: pass'], check=True)\n"
        "def test_idle():\n    pass\n")  # fmt: skip
    out = tmp_path / "cpu"
    out.mkdir()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.cpu_profile", "-p", "no:cacheprovider",
                    str(tmp_path / "test_spin.py")], cwd=REPO, check=True, capture_output=True,
                   env={**os.environ, "KBX_TEST_CPU_DIR": str(out)})  # fmt: skip
    (written,) = out.glob("cpu-*.jsonl")  # cpu-main, or this xdist worker's name, which the child inherits
    lines = {json.loads(line)["id"].split("::")[1]: json.loads(line) for line in written.read_text().splitlines()}
    assert lines["test_spin"]["children_cpu_s"] >= 0.9 and lines["test_idle"]["children_cpu_s"] < 0.1
