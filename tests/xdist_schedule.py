"""How `make test` shares the suite between its pytest-xdist processes (`--dist loadfile`, refined).

Plain `--dist loadfile` hands out whole files, so a file's module fixtures are built once; but a
file with a minutes-long test holds one process for all of it, and files go out by test count, so a
long file with few tests starts late and runs alone at the end while the other process idles.
`FilesAndUnits` keeps every file whole except for what UNITS names:

- a nodeid prefix in UNITS is one unit of work apart from its file (the tests under it share a
  module fixture, so they stay together);
- a test under a prefix in EACH_ITS_OWN is a unit by itself (no shared fixture: each judges its
  own expert), so those many short units fill in wherever a process is free.

Units go out in this order: those of LONG (minutes each, longest first), then every other file
(most tests first, as pytest-xdist does), then the EACH_ITS_OWN tests. The last are short (seconds;
the slowest expert about a minute), so they even out the processes' ends. Without pytest-xdist
(`TEST_WORKERS=0`, the `serial` part) none of this applies: tests run in collection order, as always.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

# Tests that leave their file: each prefix is one unit of work.
UNITS = (
    "tests/test_analysis_e2e.py::test_corpus_",  # the shared GEAK corpus, judged once for its five tests
    "tests/test_sweep.py::test_two_workers_share_a_study_and_prune",
    "tests/test_sweep.py::test_finds_better_region_and_resumes_after_a_killed_worker",
    "tests/test_sweep.py::test_done_when_command",
)
# Units that take minutes, longest first (measured one file at a time on the shared 2-core machine,
# 2026-11-25; docs/BENCHMARKS.md "Test suite under pytest-xdist"): they go out before anything else.
LONG = (
    "tests/test_scaling.py",  # PostgreSQL, an MLflow server restarted mid-run, stopped drivers resumed
    "tests/test_llm_scale.py",
    "tests/test_ray_pool.py",
    "tests/test_run_e2e.py",
    UNITS[0],
    UNITS[1],
    UNITS[2],
    "tests/test_llm_cli.py",
    "tests/test_analysis_e2e.py",  # the analysis store: two kbx.run jobs and a report
    "tests/test_launchers.py",
    UNITS[3],
)
EACH_ITS_OWN = ("tests/test_experts.py::test_expert_passes[",)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its own nodeid, a prefix of UNITS, or its file."""
    if nodeid.startswith(EACH_ITS_OWN):
        return nodeid
    for prefix in UNITS:
        if nodeid.startswith(prefix):
            return prefix
    return nodeid.split("::", 1)[0]


def start_rank(unit: str, tests: int) -> tuple:
    """Sort key of a unit: LONG (as listed), then the other files (most tests first, as pytest-xdist
    does), then the EACH_ITS_OWN tests."""
    if unit in LONG:
        return (0, LONG.index(unit))
    if unit.startswith(EACH_ITS_OWN):
        return (2, 0)
    return (1, -tests)


class FilesAndUnits(LoadFileScheduling):
    """`--dist loadfile`, with the units above taken out of their files and handed out in that order."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self.ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node) -> None:
        # The base class fills its work queue (by test count) just before handing out the first unit.
        if not self.ordered:
            units = sorted(self.workqueue.items(), key=lambda item: start_rank(item[0], len(item[1])))
            self.workqueue.clear()
            self.workqueue.update(units)
            self.ordered = True
        super()._assign_work_unit(node)
