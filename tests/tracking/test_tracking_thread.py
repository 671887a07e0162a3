"""The job's tracking thread: calls made in the order queued, off the caller's thread, and a
failure never lost: raised by the next submit and by flush."""

from __future__ import annotations

import threading
import time

import pytest

from kbx.tracking.thread import TrackingThread


def test_calls_run_in_order_on_their_own_thread():
    thread = TrackingThread()
    seen, gate = [], threading.Event()
    thread.submit(gate.wait)  # the caller does not wait for a slow call
    for i in range(5):
        thread.submit(lambda i=i: seen.append((i, threading.current_thread().name)))
    assert seen == []
    gate.set()
    thread.flush()
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
    assert all(name.startswith("kbx-tracking") for _, name in seen)
    thread.close()


def test_a_failure_is_raised_by_the_next_submit_and_by_flush():
    thread = TrackingThread()
    ran, gate = [], threading.Event()

    def fail():
        gate.wait()
        raise ValueError("store refused the batch")

    thread.submit(fail)
    thread.submit(ran.append, "after")  # queued before the failure was known: still made
    gate.set()
    with pytest.raises(ValueError, match="store refused"):
        thread.flush()
    assert ran == ["after"]
    with pytest.raises(ValueError, match="store refused"):
        thread.submit(ran.append, "refused")
    time.sleep(0.05)
    assert ran == ["after"]
    thread.close()
