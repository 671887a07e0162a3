"""A job's tracking calls, in order, on one thread of their own, so judging never waits on them.

Each MLflow call is a store transaction, and creating a new sqlite store runs MLflow's schema
migrations (seconds). Made by the thread that judged a task, a task's logging leaves an evaluator
slot idle; made before judging, the store's creation delays the first attempt. Here each call is
queued and made on the thread `kbx-tracking`, in the order queued, while judging goes on.

Nothing is lost or hidden: `submit` first raises the first failure of an earlier call (so a job
whose tracking fails stops, as when it logged on the judging threads), and `flush` waits for every
queued call and raises the first failure, so a job never ends with a task unlogged.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable


class TrackingThread:
    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbx-tracking")
        self._queued: list[concurrent.futures.Future] = []
        self._lock = threading.Lock()
        self._failure: BaseException | None = None

    def submit(self, call: Callable, *args, **kwargs) -> concurrent.futures.Future:
        """Queue `call(*args, **kwargs)` after every call queued before it; raises an earlier call's failure."""
        self.check()
        with self._lock:
            future = self._pool.submit(call, *args, **kwargs)
            self._queued.append(future)
        future.add_done_callback(self._note_failure)
        return future

    def check(self) -> None:
        """Raise the first failure of a queued call, if one has failed by now."""
        if self._failure is not None:
            raise self._failure

    def flush(self) -> None:
        """Wait for every call queued so far; raise the first failure."""
        with self._lock:
            queued = list(self._queued)
        concurrent.futures.wait(queued)
        self.check()

    def close(self) -> None:
        """Wait for what is queued and end the thread (failures are `flush`'s to raise)."""
        self._pool.shutdown(wait=True)

    def _note_failure(self, future: concurrent.futures.Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            with self._lock:
                if self._failure is None:
                    self._failure = future.exception()
