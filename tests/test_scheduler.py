"""The GPU scheduler: timings pause running checks at case boundaries instead of waiting them out."""

import threading
import time

from kbx.eval.scheduler import GpuScheduler


class Workers:
    """Records what the scheduler sends; `auto_ack` answers pauses like a worker between cases."""

    def __init__(self, auto_ack=True):
        self.sent: list[tuple[str, str]] = []
        self.auto_ack = auto_ack
        self.scheduler: GpuScheduler | None = None

    def send(self, job_id, command):
        self.sent.append((job_id, command))
        if command == "pause" and self.auto_ack:
            threading.Thread(target=self.scheduler.acknowledged, args=(job_id,)).start()


def make(auto_ack=True):
    workers = Workers(auto_ack)
    workers.scheduler = GpuScheduler(workers.send, pausing=True)
    return workers, workers.scheduler


def test_timing_pauses_running_checks_and_resumes_them():
    workers, gpu = make()
    gpu.start_check("a")
    gpu.start_check("b")
    with gpu.timing_slot():
        assert sorted(c for c in workers.sent if c[1] == "pause") == [("a", "pause"), ("b", "pause")]
        assert not [c for c in workers.sent if c[1] == "resume"]
    assert sorted(c for c in workers.sent if c[1] == "resume") == [("a", "resume"), ("b", "resume")]


def test_a_check_that_finished_instead_of_pausing_does_not_hold_the_timing():
    workers, gpu = make(auto_ack=False)
    gpu.start_check("a")
    entered = threading.Event()

    def time_it():
        with gpu.timing_slot():
            entered.set()

    t = threading.Thread(target=time_it)
    t.start()
    assert not entered.wait(0.2)  # waiting for "a" to acknowledge
    gpu.end_check("a")  # "a" reported its results before reading the pause
    assert entered.wait(2)
    t.join()


def test_new_checks_wait_while_a_timing_holds_the_gpu():
    workers, gpu = make()
    started = threading.Event()
    with gpu.timing_slot():
        t = threading.Thread(target=lambda: (gpu.start_check("late"), started.set()))
        t.start()
        assert not started.wait(0.2)
    assert started.wait(2)
    t.join()
    assert ("late", "check") in workers.sent


def test_a_late_acknowledgement_of_an_earlier_pause_does_not_count_for_the_next():
    workers, gpu = make(auto_ack=False)
    gpu.start_check("a")
    gpu.pauses_sent["a"] = 1  # an earlier timing paused "a" and gave up waiting
    gpu.acknowledged("a")  # ...whose acknowledgement arrives only now
    entered = threading.Event()
    t = threading.Thread(target=lambda: [entered.set() for _ in [gpu.timing_slot().__enter__()]])
    t.start()
    assert not entered.wait(0.2)  # the new pause is still unacknowledged
    gpu.acknowledged("a")
    assert entered.wait(2)
    t.join()


def test_time_spent_paused_is_counted():
    workers, gpu = make()
    mark = gpu.paused_since(0.0)
    with gpu.timing_slot():
        time.sleep(0.1)
    assert gpu.paused_since(mark) >= 0.1


def test_a_timing_waits_for_judge_comparisons_and_holds_new_ones_back():
    workers, gpu = make()
    events = []
    comparing = threading.Event()

    def compare(name, hold=0.0):
        with gpu.judge_slot():
            events.append(f"{name} in")
            comparing.set()
            time.sleep(hold)
            events.append(f"{name} out")

    first = threading.Thread(target=compare, args=("a", 0.3))
    first.start()
    assert comparing.wait(2)

    def time_it():
        with gpu.timing_slot():
            events.append("timing")
            time.sleep(0.2)

    timer = threading.Thread(target=time_it)
    timer.start()
    time.sleep(0.1)
    second = threading.Thread(target=compare, args=("b",))
    second.start()
    for t in (first, timer, second):
        t.join(5)
    assert events == ["a in", "a out", "timing", "b in", "b out"]


def test_nothing_is_paused_on_a_cpu():
    events = []
    gpu = GpuScheduler(lambda job, command: events.append(command), pausing=False)
    gpu.start_check("a")
    with gpu.timing_slot():
        pass
    assert events == ["check"]


def test_a_new_check_waits_for_device_memory_unless_it_would_be_alone():
    free = {"bytes": 1 << 30}
    events = []
    gpu = GpuScheduler(lambda job, command: events.append((job, command)), pausing=True,
                       free_bytes=lambda: free["bytes"], min_free_bytes=8 << 30)  # fmt: skip
    gpu.start_check("first")  # nothing else runs: it starts whatever memory is free
    started = threading.Event()
    t = threading.Thread(target=lambda: (gpu.start_check("second"), started.set()))
    t.start()
    assert not started.wait(1.0)  # 1 GiB free of the 8 asked for
    free["bytes"] = 9 << 30
    assert started.wait(2)
    t.join()
    gpu.end_check("first")
    gpu.end_check("second")
    unknown = GpuScheduler(lambda job, command: None, pausing=True, free_bytes=lambda: -1, min_free_bytes=8 << 30)
    unknown.start_check("a")
    unknown.start_check("b")  # NVML cannot say: memory never blocks a check
