"""Who may use the GPU when, on one device: everyone together, except in short exclusive windows.

Candidates' checks, the preparation of their timings (inputs, the compiling first call), judges'
comparisons and the timer's preparation all share the GPU. Only measured repetitions need it
alone, and they get it one perf shape at a time, in a window that the timing budget bounds
(kbx.sandbox.timing: about a second). A window opens with every process that could touch the GPU
frozen but the timer: each candidate's whole process tree, the owner's included (through the
zygote, kbx.sandbox.freezer: threads, streams and child processes stop too, so no candidate can opt
out), and the judges (SIGSTOP). The timer measures the eager baseline or waits for work already
queued on the GPU to drain, then stops, and the owner's worker process alone continues
(kbx.driver.attempt); its child processes stay stopped, its threads run, so GPU work it hides is its
own, which the timing's checks catch (kbx.sandbox.timing). Nothing has to cooperate, and nothing
waits for a slow check or comparison to reach a pause point.

Windows are granted one at a time, and after each one the shared work gets at least
SHARED_FLOOR of the window's length before the next, so back-to-back windows cannot starve checks.
Time frozen never counts against a process's deadline (`frozen_since`). A new check starts only
outside a window (it would start unfrozen) and while memory allows: the reservations of the attempts
in flight (kbx.driver.memory: each task's measured peak) leave room for its own, and the device still
has `min_free_bytes` free. An attempt alone is always admitted, whatever it reserves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator

MEMORY_POLL_S = 0.5  # how often a check waiting for device memory looks again
ALL_MEMORY = -1  # a reservation of the whole device: admitted alone, and nothing else beside it
SHARED_FLOOR = 0.5  # after a window of w seconds, shared work runs at least SHARED_FLOOR * w before the next


@dataclasses.dataclass
class Window:
    length_s: float = 0.0  # freeze to thaw; set when the window ends


class FreezeFailed(RuntimeError):
    """The processes to freeze could not all be stopped: the window would not be exclusive."""


class GpuScheduler:
    def __init__(self, freeze: Callable[[str], Callable[[], None]] | None,
                 free_bytes: Callable[[], int] | None = None, min_free_bytes: int = 0,
                 capacity_bytes: int = 0, clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        # freeze(owner job id or "") stops everyone but the timer and returns the thaw; None where
        # nothing is ever timed (a CPU), so nothing is frozen.
        self.freeze = freeze
        # A new check starts only while the device has min_free_bytes free and the reservations in
        # flight plus its own fit in capacity_bytes (0: no limit), or nothing is in flight: workers
        # beyond what memory holds would fail on allocation, not on their kernels.
        self.free_bytes = free_bytes or (lambda: -1)
        self.min_free_bytes = min_free_bytes
        self.capacity_bytes = capacity_bytes
        self.reserved: dict[str, int] = {}  # job id -> bytes, from its check's start to `release`
        self.clock = clock
        self.cond = threading.Condition()
        self.window_lock = threading.Lock()  # one window at a time
        self.in_window = False
        self.window_started = 0.0
        self.frozen_total_s = 0.0
        self.windows = 0
        self.longest_window_s = 0.0
        self.next_window_at = 0.0

    def start_check(self, job_id: str, start: Callable[[], None], need_bytes: int = 0) -> None:
        """Call `start` (tell the worker to begin its cases) outside any window, once memory allows
        `need_bytes` more, which stay reserved for `job_id` until `release`."""
        with self.cond:
            while self.in_window or (self.reserved and not self._memory_allows(need_bytes)):
                self.cond.wait(timeout=MEMORY_POLL_S)
            self.reserved[job_id] = need_bytes
            start()

    def release(self, job_id: str) -> None:
        """The attempt has ended: its memory is the device's again."""
        with self.cond:
            self.reserved.pop(job_id, None)
            self.cond.notify_all()

    def reserved_bytes(self) -> int:
        """Bytes reserved by the attempts in flight (a whole-device reservation counts as the capacity)."""
        with self.cond:
            return sum(self.capacity_bytes if b == ALL_MEMORY else b for b in self.reserved.values())

    def _memory_allows(self, need_bytes: int) -> bool:
        """Whether a check needing `need_bytes` may start beside the reservations in flight (some)."""
        if need_bytes == ALL_MEMORY or ALL_MEMORY in self.reserved.values():
            return False
        if self.capacity_bytes and sum(self.reserved.values()) + need_bytes > self.capacity_bytes:
            return False
        free = self.free_bytes()
        return free < 0 or free >= self.min_free_bytes

    @contextlib.contextmanager
    def exclusive(self, owner: str = "") -> Iterator[Window]:
        """The GPU alone for the timer, then (handed over) `owner`'s worker: everyone else frozen
        until the block ends. Raises FreezeFailed when they could not be stopped. The
        Window says, once the block has ended, how long it held the GPU (waiting for it excluded)."""
        window = Window()
        with self.window_lock:
            with self.cond:
                while (wait := self.next_window_at - self.clock()) > 0:
                    self.cond.wait(timeout=wait)
                self.in_window = True
                self.window_started = started = self.clock()
            try:
                thaw = self.freeze(owner) if self.freeze else (lambda: None)
                try:
                    yield window
                finally:
                    thaw()
            finally:
                with self.cond:
                    window.length_s = length = self.clock() - started
                    self.in_window = False
                    self.frozen_total_s += length
                    self.windows += 1
                    self.longest_window_s = max(self.longest_window_s, length)
                    self.next_window_at = self.clock() + SHARED_FLOOR * length
                    self.cond.notify_all()

    def frozen_since(self, mark: float) -> float:
        """Seconds the GPU was held alone (everyone else frozen) since `mark`, a previous
        `frozen_since(0.0)`."""
        with self.cond:
            ongoing = self.clock() - self.window_started if self.in_window else 0.0
            return self.frozen_total_s + ongoing - mark
