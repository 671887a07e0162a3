"""A quiet GPU means quiet (GPU only): a candidate's background GPU work - a thread on a side stream, a
child process, a hog that keeps seconds of work queued without ever waiting for it - never changes the
verdict or the speedup of the attempts beside it, because every other process is frozen while one is
timed (kbx.driver.scheduler) and the process whose queued work would not drain is found and ended
(kbx.driver.hogs); and the candidate's own hidden work fails it, not its neighbours, who finish in about
the time they take beside a plain kernel. The runs are kbx.bench.quiet's, whose figures `python -m
kbx.bench quiet` prints."""

from __future__ import annotations

import pytest

from kbx.bench.quiet import CHARGED_NOISE, HOGS, format_quiet_report, neighbour_runs, quiet_report, speedup_change
from kbx.core.record import Status
from kbx.driver.evaluator import EvalSettings, Evaluator

SPEEDUP_TOLERANCE = 0.05  # the repeatability goal (p95 of |delta|) for the same kernel timed twice
# Beyond the four beside a plain gelu, what a hog may cost them: the window that finds it waits out the quiet
# wait twice (2 s each), and until then the hog's queue shares the GPU with their checks.
HOG_EXTRA_S = 15.0


@pytest.mark.gpu
@pytest.mark.serial
def test_background_gpu_work_never_touches_a_neighbours_verdict():
    walls: dict = {}
    with Evaluator(EvalSettings(device="cuda", workers=4)) as ev:
        runs = neighbour_runs(ev, walls)
    print(format_quiet_report(quiet_report(runs, walls)))  # the figures `kbx.bench quiet` gives, for a failure's reader
    clean = runs.pop("clean")
    assert all(r.status is Status.OK for r in clean), [(r.task, r.status.value, r.reason) for r in clean]
    for name, (noisy, *beside) in runs.items():
        for rec, ref in zip(beside, clean, strict=True):
            assert rec.status is Status.OK, f"{name}: {rec.task} {rec.status.value}: {rec.reason}"
            assert speedup_change(rec, ref) <= SPEEDUP_TOLERANCE, f"{name}: {rec.task} {ref.speedup:.3f}x -> {rec.speedup:.3f}x"
            if name in HOGS:  # the window that met the hog found it: nobody beside it was redone
                assert rec.harness_retries == 0, f"{name}: {rec.task} was redone: {rec.harness_failures}"
        if name in CHARGED_NOISE:
            assert noisy.status is Status.HIDDEN_WORK, f"{name}: {noisy.status.value}: {noisy.reason}"
            assert not noisy.correct
        else:  # the plain gelu; the child process, frozen with its tree whenever anyone is timed, itself included
            assert noisy.status is Status.OK, f"{name}: {noisy.status.value}: {noisy.reason}"
    for name in HOGS:
        assert "it runs threads of its own" in runs[name][0].reason, runs[name][0].reason
        plain = walls["nothing"]
        assert walls[name] <= plain + HOG_EXTRA_S, f"{name}: {walls[name]:.1f} s against {plain:.1f} s"
