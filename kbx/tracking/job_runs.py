"""One job's MLflow side: its job run, a task run per task as it completes, the job's end.

Every call goes through one TrackingThread (kbx.tracking.thread), so judging never waits on a
task's logging, and a new store is created while judging starts. The job waits only where it
must: to learn which tasks an unfinished run of the same configuration already did (`resume`);
for its run to exist before judging where a candidate could take the driver down (the sandbox
off: the in-flight journal needs a run to blame it in, kbx.driver.inflight); and at the end, when
everything queued is flushed and checked before the job run is marked FINISHED.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kbx.driver.inflight import InFlightJournal
from kbx.tracking.thread import TrackingThread
from kbx.tracking.tracker import Tracker

log = logging.getLogger("kbx")


class JobTracking:
    def __init__(self, make_tracker: Callable[[], Tracker], journal: InFlightJournal,
                 task_tags: dict[str, str]) -> None:  # fmt: skip
        self.journal = journal  # bound to the job run's id once it is known
        self.task_tags = task_tags
        self.thread = TrackingThread()
        self.tracker: Tracker | None = None
        self.run_id = ""
        self.logged: list[str] = []  # tasks whose runs are logged in full, in this session
        self.thread.submit(self._connect, make_tracker)

    def open(self, name: str, params: dict, tags: dict, tasks: list, resume: bool, before_judging: bool) -> dict:
        """Start the job run; with `resume`, take up an unfinished one of the same configuration if
        there is one, and return its tasks already done (task id -> TaskResult). The job waits for the
        store only for `resume` or `before_judging`; otherwise the run is created while judging starts."""
        if resume:
            return self.thread.submit(self._resume_or_start, name, params, tags, tasks).result()
        started = self.thread.submit(self._start, name, params, tags)
        if before_judging:
            started.result()
        return {}

    def log_task(self, result, method: str, hardware) -> None:
        """Queue the task's run (kbx.tracking.tracker.Tracker.log_task); its journal entry follows it."""
        self.thread.submit(self._log_task, result, method, hardware)

    def finish(self, summary: dict, artifacts: dict[str, str], extra: dict, late_params: dict,
               tags: dict[str, str], status: str = "FINISHED") -> None:  # fmt: skip
        """After every task: the params known only now, the tags (an empty value deletes the tag: a resumed
        run's stale word), the headline metrics, the job's files, then `status` (FINISHED; FAILED for a job
        with tasks to redo). Waits for everything queued; raises the first failure of any of it."""
        self.thread.submit(self._finish, summary, artifacts, extra, late_params, tags, status)
        self.flush()

    def flush(self) -> None:
        self.thread.flush()

    def end(self, status: str) -> None:
        """A job stopped before its end: what is queued is logged (a task judged is not judged again
        on resume), then the job run is marked `status` (KILLED, FAILED). A failure here is logged,
        not raised, so it never hides why the job stopped."""
        try:
            self.thread.flush()
        except Exception as exc:  # noqa: BLE001 - the job's own error is the one to raise
            log.warning("tracking failed while the job stopped: %s", exc)
        if self.tracker is not None and self.run_id:
            try:
                self.tracker.client.set_terminated(self.run_id, status)
            except Exception as exc:  # noqa: BLE001
                log.warning("could not mark MLflow run %s %s: %s", self.run_id, status, exc)

    def close(self) -> None:
        self.thread.close()

    # ----- on the tracking thread ------------------------------------------------------------

    def _connect(self, make_tracker: Callable[[], Tracker]) -> None:
        self.tracker = make_tracker()

    def _require(self) -> Tracker:
        if self.tracker is None:  # _connect failed: raise its failure, not a later symptom
            self.thread.check()
            raise RuntimeError("the tracking store was not opened")
        return self.tracker

    def _start(self, name: str, params: dict, tags: dict) -> None:
        tracker = self._require()
        self._bind(tracker.start_parent(name, params, tags))

    def _resume_or_start(self, name: str, params: dict, tags: dict, tasks: list) -> dict:
        tracker = self._require()
        parent = tracker.find_resumable(params, tags)
        if not parent:
            self._start(name, params, tags)
            return {}
        done = tracker.finished_tasks(parent, tasks)
        tracker.reopen(parent, {**tags, "kbx.resumed_tasks": str(len(done))})
        log.info("resuming MLflow run %s: %d of %d tasks already done", parent, len(done), len(tasks))
        self._bind(parent)
        return done

    def _bind(self, run_id: str) -> None:
        self.run_id = run_id
        self.journal.bind(run_id)
        log.info("MLflow run %s in %s", run_id, self._require().uri)

    def _log_task(self, result, method: str, hardware) -> None:
        self._require().log_task(self.run_id, result, method, hardware, tags=self.task_tags)
        self.journal.finished(result.task.id)
        self.logged.append(result.task.id)

    def _finish(self, summary: dict, artifacts: dict[str, str], extra: dict, late_params: dict,
                tags: dict[str, str], status: str) -> None:  # fmt: skip
        tracker = self._require()
        tracker.log_new_params(self.run_id, late_params)
        had = tracker.client.get_run(self.run_id).data.tags
        for key, value in tags.items():  # "": the tag no longer holds (a resumed job that put it right)
            if value:
                tracker.client.set_tag(self.run_id, key, value)
            elif key in had:
                tracker.client.delete_tag(self.run_id, key)
        tracker.drop_unfinished_children(self.run_id)
        tracker.finish_parent(self.run_id, summary, artifacts, status=status, extra=extra)
