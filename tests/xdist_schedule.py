"""How `make test` shares the suite between its pytest-xdist processes (`--dist loadfile`, refined).

Plain `--dist loadfile` hands out whole files, so a file's module fixtures are built once; but a
file with a minutes-long test holds one process for all of it, and files go out by test count, so a
long file with few tests starts late and runs alone at the end while the other process idles.
`FilesAndUnits` keeps every file whole except for:

- UNITS: each nodeid prefix there is one unit of work apart from its file (the tests under it share
  a module fixture, so they stay together);
- tests/experts/test_experts.py's expert tests: one unit per task category (the test file judges a
  category's experts together, two at a time).

Units go out in this order: the minutes-long ones of LONG (longest first) taken in turn with the
expert categories (largest first), then every other file (most tests first, as pytest-xdist does).
Taking them in turn matters on 2 cores: the long end-to-end tests spend much of their time waiting
(on servers, subprocesses, sleeps), and an expert category judged beside them, CPU-bound and two
attempts at a time, uses the core they leave idle. The short files at the end even out the
processes' ends. Without pytest-xdist (`TEST_WORKERS=0`, the `serial` part) none of this applies:
tests run in collection order, as always.
"""

from __future__ import annotations

import itertools

from xdist.scheduler import LoadFileScheduling

# Tests that leave their file: each prefix is one unit of work.
UNITS = (
    "tests/analysis/test_analysis_e2e.py::test_corpus_",  # the shared GEAK corpus, judged once for its five tests
    "tests/sweeps/test_sweep.py::test_two_workers_share_a_study_and_prune",
    "tests/sweeps/test_sweep.py::test_finds_better_region_and_resumes_after_a_killed_worker",
    "tests/sweeps/test_sweep.py::test_done_when_command",
)
# Units that take minutes, longest first (measured one file at a time on the shared 2-core machine,
# 2026-11-25; docs/BENCHMARKS.md "Test suite under pytest-xdist"): they go out before anything else.
LONG = (
    "tests/job/test_scaling.py",  # PostgreSQL, an MLflow server restarted mid-run, stopped drivers resumed
    "tests/job/test_llm_scale.py",
    "tests/driver/test_ray_pool.py",
    "tests/job/test_run_e2e.py",
    UNITS[0],
    UNITS[1],
    UNITS[2],
    "tests/job/test_llm_cli.py",
    "tests/analysis/test_analysis_e2e.py",  # the analysis store: two kbx.run jobs and a report
    "tests/job/test_launchers.py",
    UNITS[3],
)
EXPERT_TESTS = "tests/experts/test_experts.py::test_expert_passes["


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its expert category, a prefix of UNITS, or its file."""
    if nodeid.startswith(EXPERT_TESTS):
        return nodeid[: nodeid.index("/", len(EXPERT_TESTS)) + 1]  # ...test_expert_passes[Fusion/
    for prefix in UNITS:
        if nodeid.startswith(prefix):
            return prefix
    return nodeid.split("::", 1)[0]


def start_order(units: dict[str, int]) -> list[str]:
    """The units (name -> number of tests) in the order they go out: see the module docstring."""
    long = [unit for unit in LONG if unit in units]
    experts = sorted((unit for unit in units if unit.startswith(EXPERT_TESTS)), key=lambda unit: -units[unit])
    in_turn = [unit for pair in itertools.zip_longest(long, experts) for unit in pair if unit]
    rest = sorted((unit for unit in units if unit not in in_turn), key=lambda unit: -units[unit])
    return in_turn + rest


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
            units = dict(self.workqueue)
            self.workqueue.clear()
            self.workqueue.update((unit, units[unit]) for unit in start_order({u: len(t) for u, t in units.items()}))
            self.ordered = True
        super()._assign_work_unit(node)
