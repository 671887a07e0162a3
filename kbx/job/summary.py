"""Suite-level figures from task results, and the end-of-run table.

Rates divide by every selected task (a task the method produced nothing for counts as a
failure, and so does one whose answer was cut off at its token limit, `truncated`), never by the
number of submissions: upstream's per-submission rates inflated partial runs. Tasks without a
verdict on a kernel through no fault of the method (harness_error, quarantined, llm_error: the
LLM never answered) are counted apart.
"""

from __future__ import annotations

import math

from kbx.core.record import Status
from kbx.methods.loop import TaskResult

FAST_P = 1.0  # fast_1: share of tasks that are correct and faster than eager


def summarize(results: list[TaskResult]) -> dict[str, float]:
    """n_tasks, compile_rate, correct_rate, fast_1, n_timed and geomean_speedup (NaN when nothing was
    timed). Rates are over the tasks with a verdict: n_harness_error, n_quarantined and n_llm_error count
    the rest; n_truncated counts tasks whose best attempt is an answer cut off at its token limit.
    n_extra_failed counts correct tasks that failed one of kbx's extra cases (beyond upstream's
    contract), which never decide correctness."""
    everything = [r.best() for r in results]
    best = [b for b in everything if b.status.judged]  # harness failures and quarantined tasks apart
    n = len(best)
    timed = [b.speedup for b in best if b.correct and b.timed and b.speedup == b.speedup]
    return {
        "n_tasks": float(len(everything)),
        "n_harness_error": float(sum(b.status is Status.HARNESS_ERROR for b in everything)),
        "n_quarantined": float(sum(b.status is Status.QUARANTINED for b in everything)),
        "n_llm_error": float(sum(b.status is Status.LLM_ERROR for b in everything)),
        "n_truncated": float(sum(b.status is Status.TRUNCATED for b in everything)),
        "n_extra_failed": float(sum(b.correct and b.extra_cases_failed > 0 for b in best)),
        "compile_rate": sum(b.compiled for b in best) / n if n else 0.0,
        "correct_rate": sum(b.correct for b in best) / n if n else 0.0,
        "fast_1": sum(1 for s in timed if s > FAST_P) / n if n else 0.0,
        "n_timed": float(len(timed)),
        "geomean_speedup": math.exp(sum(math.log(s) for s in timed) / len(timed)) if timed else math.nan,
    }


def table(results: list[TaskResult]) -> str:
    """A fixed-width table: one line per task (its best attempt), then the totals."""
    rows = [("task", "status", "compiled", "correct", "speedup", "reason")]
    for r in results:
        b = r.best()
        speed = f"{b.speedup:.2f}x" if b.timed and b.speedup == b.speedup else "-"
        rows.append((r.task.id, b.status.value, "yes" if b.compiled else "no", "yes" if b.correct else "no", speed,
                     (b.reason or b.timing_skipped_reason)[:60]))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)) + "  " + row[-1] for row in rows]
    s = summarize(results)
    geo = f"{s['geomean_speedup']:.2f}x" if s["geomean_speedup"] == s["geomean_speedup"] else "n/a (not timed)"
    lines.append(
        f"\n{int(s['n_tasks'])} tasks: compiled {s['compile_rate']:.1%}, correct {s['correct_rate']:.1%}, "
        f"fast_1 {s['fast_1']:.1%}, geomean speedup {geo}"
        + _left_out(s)
        + (f"; {int(s['n_truncated'])} tasks' best answer was cut off at its token limit (truncated)"
           if s["n_truncated"] else "")
        + (f"; {int(s['n_extra_failed'])} correct tasks failed kbx's extra cases (beyond upstream's contract)"
           if s["n_extra_failed"] else "")
    )
    return "\n".join(lines)


def _left_out(s: dict[str, float]) -> str:
    parts = [f"{int(s[key])} {what}" for key, what in (("n_harness_error", "harness errors (kbx's own failures)"),
                                                        ("n_quarantined", "quarantined"),
                                                        ("n_llm_error", "LLM errors (no answer from the LLM)"))
             if s[key]]  # fmt: skip
    return "; left out of the rates: " + ", ".join(parts) if parts else ""
