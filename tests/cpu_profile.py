"""Where the suite's CPU goes: `pytest -p tests.cpu_profile ...` appends one JSON line per test to
`$KBX_TEST_CPU_DIR/cpu-<xdist worker>.jsonl` (CPU seconds of the test process and of the processes it
reaped during the test, and wall seconds); `python -m tests.cpu_profile DIR` sums them per test file.

A child's CPU is counted when it is reaped: a session-scoped evaluator's workers and judges (the expert
tests') are charged to whichever test runs when the session closes it, so read those files together.
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

DIR_VARIABLE = "KBX_TEST_CPU_DIR"
TOP_FILES = 25  # files listed by the summary, most CPU first


def _cpu_s() -> tuple[float, float]:
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_START] = (_cpu_s(), time.perf_counter())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    if call.when != "teardown" or _START not in item.stash:
        return
    (own0, reaped0), wall0 = item.stash[_START]
    own, reaped = _cpu_s()
    out = Path(os.environ.get(DIR_VARIABLE, ".")) / f"cpu-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"
    with open(out, "a") as f:
        f.write(json.dumps({"id": item.nodeid, "self_cpu_s": own - own0, "children_cpu_s": reaped - reaped0,
                            "wall_s": time.perf_counter() - wall0}) + "\n")  # fmt: skip


_START = pytest.StashKey[tuple]()


def per_file(directory: Path) -> list[tuple[str, float, float, int]]:
    """(test file, CPU seconds, wall seconds, tests) per file, most CPU first."""
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for path in sorted(directory.glob("cpu-*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            entry = files[row["id"].split("::")[0]]
            entry[0] += row["self_cpu_s"] + row["children_cpu_s"]
            entry[1] += row["wall_s"]
            entry[2] += 1
    return sorted(((f, cpu, wall, int(n)) for f, (cpu, wall, n) in files.items()), key=lambda r: -r[1])


if __name__ == "__main__":
    rows = per_file(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    print(f"{sum(r[1] for r in rows):.0f} CPU s, {sum(r[2] for r in rows):.0f} test wall s, {len(rows)} files")
    for name, cpu, wall, n in rows[:TOP_FILES]:
        print(f"{cpu:8.1f} CPU s {wall:8.1f} wall s {n:5d} tests  {name}")
