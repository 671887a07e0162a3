"""Who may use the GPU when: many correctness runs at once, or one timing alone.

A timing must own the device: another process's kernels would slow the timed ones. Holding
every correctness run back until the GPU is free (a reader/writer lock over whole checks) makes
one slow check stall the pipeline for everyone, since a waiting timing blocks new checks too.
Instead a timing pauses the running checks at their next case boundary: each such worker
finishes the GPU work it has queued, acknowledges, and waits for "resume" (kbx.worker.child).
Judge comparisons (references and comparisons on the same GPU, short) hold a shared slot that a
timing waits out and that new comparisons cannot take while a timing waits or runs. Stopping the
judges instead (SIGSTOP) starved them on an H100: with a dozen workers, timings ran back to back
and verdicts waited 100 s. Reading a worker's outputs file needs no slot. Time spent paused does
not count against a worker's check timeout. Workers also pause inside a case, before any Triton
launch (kbx.worker.instrument), so a long autotune does not hold a timing back. A new check waits
for free device memory.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

PAUSE_ACK_TIMEOUT_S = 30.0  # a worker silent this long is waited for no further; the timing goes ahead
MEMORY_POLL_S = 0.5  # how often a check waiting for device memory looks again


class GpuScheduler:
    def __init__(self, send: Callable[[str, str], None], pausing: bool,
                 free_bytes: Callable[[], int] | None = None, min_free_bytes: int = 0) -> None:  # fmt: skip
        self.send = send  # send(job_id, command) to a worker
        self.pausing = pausing  # on a CPU nothing is timed, so nothing needs pausing
        # A new check starts only while the device has min_free_bytes free (or none is running):
        # workers beyond what memory holds would fail on allocation, not on their kernels.
        self.free_bytes = free_bytes or (lambda: -1)
        self.min_free_bytes = min_free_bytes
        self.cond = threading.Condition()
        self.judging = 0  # judge comparisons in progress
        self.timing_lock = threading.Lock()  # one timing at a time
        self.checking: set[str] = set()
        # A worker acknowledges every pause it reads while still running cases, once; counting
        # both sides keeps a late acknowledgement of an earlier pause from passing for this one.
        self.pauses_sent: dict[str, int] = {}
        self.pauses_acked: dict[str, int] = {}
        self.timing = False
        self.paused_total_s = 0.0

    def start_check(self, job_id: str) -> None:
        """Let a worker begin its cases (waiting out a timing in progress, and for device memory)."""
        with self.cond:
            while self.timing or (self.checking and not self._memory_free()):
                self.cond.wait(timeout=MEMORY_POLL_S)
            self.checking.add(job_id)
            self.send(job_id, "check")

    def _memory_free(self) -> bool:
        free = self.free_bytes()
        return free < 0 or free >= self.min_free_bytes

    def end_check(self, job_id: str) -> None:
        with self.cond:
            self.checking.discard(job_id)
            self.pauses_sent.pop(job_id, None)
            self.pauses_acked.pop(job_id, None)
            self.cond.notify_all()

    def acknowledged(self, job_id: str) -> None:
        """A worker reports that it is paused (called from the zygote client's reader thread)."""
        with self.cond:
            self.pauses_acked[job_id] = self.pauses_acked.get(job_id, 0) + 1
            self.cond.notify_all()

    @contextlib.contextmanager
    def judge_slot(self) -> Iterator[None]:
        """A judge comparison: alongside checks and other comparisons, never during a timing."""
        with self.cond:
            self.cond.wait_for(lambda: not self.timing)
            self.judging += 1
        try:
            yield
        finally:
            with self.cond:
                self.judging -= 1
                self.cond.notify_all()

    @contextlib.contextmanager
    def timing_slot(self) -> Iterator[None]:
        """The GPU alone: running checks paused, no judge comparison, no other timing."""
        with self.timing_lock:
            started = time.monotonic()
            with self.cond:
                self.timing = True
                paused = set(self.checking) if self.pausing else set()
                for job_id in paused:
                    self.pauses_sent[job_id] = self.pauses_sent.get(job_id, 0) + 1
                    self.send(job_id, "pause")
            self._wait_paused(paused)
            try:
                yield
            finally:
                for job_id in paused:
                    self.send(job_id, "resume")
                with self.cond:
                    self.timing = False
                    self.paused_total_s += time.monotonic() - started
                    self.cond.notify_all()

    def paused_since(self, mark: float) -> float:
        """Seconds checks were held back since `mark` (a previous `paused_total_s`)."""
        with self.cond:
            return self.paused_total_s - mark

    def _wait_paused(self, jobs: set[str]) -> None:
        deadline = time.monotonic() + PAUSE_ACK_TIMEOUT_S
        with self.cond:
            while time.monotonic() < deadline:
                if self.judging == 0 and all(j not in self.checking or
                                             self.pauses_acked.get(j, 0) >= self.pauses_sent.get(j, 0)
                                             for j in jobs):  # fmt: skip
                    return
                self.cond.wait(timeout=max(0.0, deadline - time.monotonic()))
