"""Which tasks were in flight when a driver died, so a kernel that takes its driver down cannot
block a job forever.

Each driver session appends to a local journal beside the job (one JSON line per event: a task's
attempts started, they were judged, the task finished). Only a task whose attempts were being
judged when the driver died is blamed: kbx.methods.loop judges one task while another finishes its
bookkeeping, and only judging runs candidate code. On resume, a task that was in flight in
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
    """The journal of one job run. A new job's run id comes from the tracking store, which a job does
    not wait for before judging (kbx.tracking.thread): events until `bind(run_id)` are kept in memory
    and written then. A driver that dies before that leaves no job run to resume, so nothing to blame."""

    def __init__(self, root: Path, run_id: str, session: str) -> None:
        self.root = root
        self.path: Path | None = None
        self.unwritten: list[str] = []  # lines of events before the run id was known
        self.session = session
        self.started_here: set[str] = set()
        self.lock = threading.Lock()
        if run_id:
            self.bind(run_id)

    def bind(self, run_id: str) -> None:
        """The job run's id is known: the journal is its file from now on, with the events kept so far."""
        with self.lock:  # held while writing: the kept events go first, in order
            self.path = self.root / JOURNAL_DIR / f"{run_id}.jsonl"
            if self.unwritten:
                self._write(self.path, "".join(self.unwritten))
            self.unwritten = []

    def deaths(self) -> dict[str, int]:
        """Task id -> how many earlier sessions ended while its attempts were being judged."""
        last: dict[tuple[str, str], str] = {}  # (task, session) -> its last event
        if self.path is not None and self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    event = json.loads(line)
                    last[(event["task"], event["session"])] = event["event"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by the death it records
        counts = collections.Counter(task for (task, _), event in last.items() if event == "started")
        return dict(counts)

    def started(self, task_id: str) -> None:
        with self.lock:
            if task_id in self.started_here:
                return
            self.started_here.add(task_id)
        self._append("started", task_id)

    def judged(self, task_id: str) -> None:
        """The task's attempts are judged: a death from now on is not theirs."""
        with self.lock:
            self.started_here.discard(task_id)
        self._append("judged", task_id)

    def finished(self, task_id: str) -> None:
        self._append("finished", task_id)

    def _append(self, event: str, task_id: str) -> None:
        line = json.dumps({"event": event, "task": task_id, "session": self.session}) + "\n"
        with self.lock:
            if self.path is None:
                self.unwritten.append(line)
            else:
                self._write(self.path, line)

    @staticmethod
    def _write(path: Path, lines: str) -> None:
        """One write(2) per call, so a killed driver leaves whole lines (the kernel keeps them)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, lines.encode())
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
        try:
            return self._evaluator.evaluate_one(attempt)
        finally:
            self._journal.judged(attempt.task.id)

    def evaluate(self, attempts, on_record=None):
        tasks = list(dict.fromkeys(a.task.id for a in attempts))
        for task_id in tasks:
            self._journal.started(task_id)
        try:
            return self._evaluator.evaluate(attempts, on_record)
        finally:
            for task_id in tasks:
                self._journal.judged(task_id)
