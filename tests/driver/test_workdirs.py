"""The evaluator's working directories: a dead driver's are removed at the next start, a live one's never."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from kbx.driver import workdirs


def test_only_directories_of_dead_drivers_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_dir = tmp_path / f"kbx-eval-{int(dead.stdout)}-abc"
    mine = tmp_path / f"kbx-eval-{os.getpid()}-def"
    older_format = tmp_path / "kbx-eval-x1y2z3"  # no owner in its name: left alone
    other = tmp_path / "unrelated"
    for d in (dead_dir, mine, older_format, other):
        (d / "jobs").mkdir(parents=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_dir = tmp_path / f"kbx-eval-{live.pid}-ghi"
        reused = tmp_path / f"kbx-eval-{live.pid}-jkl"  # last written before `live` started: a reused pid
        live_dir.mkdir()
        reused.mkdir()
        hour_ago = time.time() - 3600
        os.utime(reused, (hour_ago, hour_ago))
        removed = workdirs.remove_stale(tmp_path)
    finally:
        live.kill()
        live.wait()
    assert sorted(removed) == sorted([dead_dir, reused])
    assert not dead_dir.exists() and not reused.exists()
    assert mine.exists() and live_dir.exists() and older_format.exists() and other.exists()


def test_create_names_the_directory_for_this_process(tmp_path):
    made = workdirs.create(str(tmp_path))
    assert made.parent == tmp_path and made.name.startswith(f"kbx-eval-{os.getpid()}-")
