"""Which tasks were in flight when a driver died, so a kernel that takes its driver down cannot
block a job forever.

Each driver session appends to a local journal beside the job (one JSON line per event: a task's
first attempt started, the task finished). On resume, a task that was in flight in
QUARANTINE_AFTER sessions that never finished it is quarantined: recorded with that status and
skipped, so the job can finish. With the sandbox on, no candidate can reach its driver; the
journal is for what still can (the kernel's OOM killer, a driver bug, `eval.sandbox=none`).
"""

from __future__ import annotations

import collections
import json
import os
import threading
from pathlib import Path

QUARANTINE_AFTER = 2  # sessions that died with the task in flight
JOURNAL_DIR = Path(".kbx_cache") / "inflight"


class InFlightJournal:
    def __init__(self, root: Path, run_id: str, session: str) -> None:
        self.path = root / JOURNAL_DIR / f"{run_id}.jsonl"
        self.session = session
        self.started_here: set[str] = set()
        self.lock = threading.Lock()

    def deaths(self) -> dict[str, int]:
        """Task id -> how many earlier sessions started it and never finished it."""
        started, finished = collections.defaultdict(set), collections.defaultdict(set)
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    event = json.loads(line)
                    (finished if event["event"] == "finished" else started)[event["task"]].add(event["session"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by the death it records
        return {task: len(sessions - finished[task]) for task, sessions in started.items() if sessions - finished[task]}

    def started(self, task_id: str) -> None:
        with self.lock:
            if task_id in self.started_here:
                return
            self.started_here.add(task_id)
        self._append("started", task_id)

    def finished(self, task_id: str) -> None:
        self._append("finished", task_id)

    def _append(self, event: str, task_id: str) -> None:
        """One write(2) per line, so a killed driver leaves whole lines (the kernel keeps them)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"event": event, "task": task_id, "session": self.session}) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


class JournaledEvaluator:
    """An evaluator (local, pool or Ray) that notes in the journal when a task's attempts start."""

    def __init__(self, evaluator, journal: InFlightJournal) -> None:
        self._evaluator = evaluator
        self._journal = journal

    def __getattr__(self, name: str):
        return getattr(self._evaluator, name)

    def evaluate_one(self, attempt):
        self._journal.started(attempt.task.id)
        return self._evaluator.evaluate_one(attempt)

    def evaluate(self, attempts, on_record=None):
        for attempt in attempts:
            self._journal.started(attempt.task.id)
        return self._evaluator.evaluate(attempts, on_record)
