"""A quiet GPU means quiet (GPU only): a candidate's background GPU work - a thread on a side
stream, a child process - never changes the verdict or the speedup of the attempts beside it,
because every other process is frozen while one is timed (kbx.driver.scheduler); and the
candidate's own hidden work fails it, not its neighbours. The runs are kbx.bench.quiet's, whose
figures `python -m kbx.bench quiet` prints."""

from __future__ import annotations

import pytest

from kbx.bench.quiet import format_quiet_report, neighbour_runs, quiet_report, speedup_change
from kbx.core.record import Status
from kbx.driver.evaluator import EvalSettings, Evaluator

SPEEDUP_TOLERANCE = 0.05  # the repeatability goal (p95 of |delta|) for the same kernel timed twice


@pytest.mark.gpu
@pytest.mark.serial
def test_background_gpu_work_never_touches_a_neighbours_verdict():
    with Evaluator(EvalSettings(device="cuda", workers=4)) as ev:
        runs = neighbour_runs(ev)
    print(format_quiet_report(quiet_report(runs)))  # the figures `kbx.bench quiet` gives, for a failure's reader
    clean = runs.pop("clean")
    assert all(r.status is Status.OK for r in clean), [(r.task, r.status.value, r.reason) for r in clean]
    for name, (noisy, *beside) in runs.items():
        for rec, ref in zip(beside, clean, strict=True):
            assert rec.status is Status.OK, f"{name}: {rec.task} {rec.status.value}: {rec.reason}"
            assert speedup_change(rec, ref) <= SPEEDUP_TOLERANCE, f"{name}: {rec.task} {ref.speedup:.3f}x -> {rec.speedup:.3f}x"
        if name == "child process":
            # frozen with the rest of its tree whenever anyone is timed, itself included
            assert noisy.status is Status.OK, f"{name}: {noisy.status.value}: {noisy.reason}"
        else:
            assert noisy.status is Status.HIDDEN_WORK, f"{name}: {noisy.status.value}: {noisy.reason}"
            assert not noisy.correct
