"""The GPU scheduler: exclusive windows freeze everyone else, one at a time, and never starve checks."""

from __future__ import annotations

import threading
import time

import pytest

from kbx.driver.scheduler import ALL_MEMORY, SHARED_FLOOR, FreezeFailed, GpuScheduler


class Freezer:
    """Records freezes and thaws, as the evaluator's zygote and judges would see them."""

    def __init__(self, fail: bool = False) -> None:
        self.log: list[tuple] = []
        self.frozen = False
        self.fail = fail

    def __call__(self, owner: str):
        if self.fail:
            raise FreezeFailed("not confirmed")
        assert not self.frozen, "two windows at once"
        self.frozen = True
        self.log.append(("freeze", owner))

        def thaw():
            self.frozen = False
            self.log.append(("thaw", owner))

        return thaw


def test_a_window_freezes_everyone_and_thaws_after():
    freezer = Freezer()
    gpu = GpuScheduler(freezer)
    with gpu.exclusive("a"):
        assert freezer.frozen
    with gpu.exclusive():
        pass
    assert freezer.log == [("freeze", "a"), ("thaw", "a"), ("freeze", ""), ("thaw", "")]
    assert gpu.windows == 2


def test_windows_never_overlap():
    freezer = Freezer()  # asserts on a second freeze while one is in place
    gpu = GpuScheduler(freezer)
    inside = []

    def owner(name):
        with gpu.exclusive(name):
            inside.append(name)
            time.sleep(0.01)

    threads = [threading.Thread(target=owner, args=(f"j{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(inside) == [f"j{i}" for i in range(6)] and not freezer.frozen


def test_a_check_does_not_start_inside_a_window():
    gpu = GpuScheduler(Freezer())
    started = threading.Event()
    with gpu.exclusive("a"):
        threading.Thread(target=gpu.start_check, args=("b", started.set)).start()
        assert not started.wait(0.2)  # it would run unfrozen beside the timing
    assert started.wait(5)


def test_shared_work_gets_its_floor_between_back_to_back_windows():
    gpu = GpuScheduler(Freezer())
    window_s = 0.2
    with gpu.exclusive("a"):
        time.sleep(window_s)
    ended = time.monotonic()
    with gpu.exclusive("b"):
        began = time.monotonic()
    assert began - ended >= SHARED_FLOOR * window_s * 0.9


def test_a_window_reports_its_length_without_the_wait_for_it():
    gpu = GpuScheduler(Freezer())
    with gpu.exclusive("a"):
        time.sleep(0.2)
    waited = time.monotonic()
    with gpu.exclusive("b") as window:  # waits out the shared floor after "a" first
        time.sleep(0.05)
    assert time.monotonic() - waited >= 0.05 + SHARED_FLOOR * 0.2 * 0.9
    assert 0.05 <= window.length_s < 0.05 + SHARED_FLOOR * 0.2 * 0.5


def test_frozen_time_counts_the_window_in_progress():
    gpu = GpuScheduler(Freezer())
    mark = gpu.frozen_since(0.0)
    with gpu.exclusive("a"):
        time.sleep(0.1)
        assert gpu.frozen_since(mark) >= 0.1  # a deadline checked mid-window already excludes it
    assert gpu.frozen_since(mark) >= 0.1 and gpu.longest_window_s >= 0.1


def test_a_freeze_that_fails_ends_the_window_cleanly():
    gpu = GpuScheduler(Freezer(fail=True))
    with pytest.raises(FreezeFailed):
        with gpu.exclusive("a"):
            pass
    started = threading.Event()
    gpu.start_check("b", started.set)
    assert started.is_set() and not gpu.in_window


def test_nothing_is_frozen_on_a_cpu():
    gpu = GpuScheduler(None)
    with gpu.exclusive("a"):
        pass
    started = threading.Event()
    gpu.start_check("b", started.set)
    assert started.is_set()


def test_a_new_check_waits_for_device_memory():
    free = [1 << 30]
    gpu = GpuScheduler(Freezer(), free_bytes=lambda: free[0], min_free_bytes=8 << 30)
    first, second = threading.Event(), threading.Event()
    gpu.start_check("a", first.set)  # alone on the device: starts whatever memory says
    threading.Thread(target=gpu.start_check, args=("b", second.set)).start()
    assert first.is_set() and not second.wait(0.3)
    free[0] = 16 << 30
    assert second.wait(5)
    unknown = GpuScheduler(Freezer(), free_bytes=lambda: -1, min_free_bytes=8 << 30)
    unknown.start_check("a", lambda: None)
    done = threading.Event()
    unknown.start_check("b", done.set)  # NVML cannot say: never blocks
    assert done.is_set()


def test_reservations_in_flight_admit_only_what_fits():
    """Measured peaks (kbx.driver.memory): 10 + 20 of 32 GiB fit, a third 10 waits until one ends."""
    gib = 1 << 30
    gpu = GpuScheduler(Freezer(), free_bytes=lambda: 64 * gib, min_free_bytes=8 * gib, capacity_bytes=32 * gib)
    gpu.start_check("a", lambda: None, 10 * gib)
    gpu.start_check("b", lambda: None, 20 * gib)
    third = threading.Event()
    threading.Thread(target=gpu.start_check, args=("c", third.set, 10 * gib)).start()
    assert not third.wait(0.3) and gpu.reserved_bytes() == 30 * gib
    gpu.release("b")
    assert third.wait(5) and gpu.reserved_bytes() == 20 * gib


def test_a_reservation_larger_than_the_device_runs_alone():
    gib = 1 << 30
    gpu = GpuScheduler(Freezer(), capacity_bytes=32 * gib)
    gpu.start_check("huge", lambda: None, 100 * gib)  # nothing in flight: admitted, it has the device
    small = threading.Event()
    threading.Thread(target=gpu.start_check, args=("small", small.set, gib)).start()
    assert not small.wait(0.3)
    gpu.release("huge")
    assert small.wait(5)


def test_the_whole_device_waits_for_everyone_and_keeps_everyone_out():
    """An attempt that ran out of memory beside others is redone with ALL_MEMORY (kbx.driver.attempt),
    with or without measured peaks."""
    for capacity in (0, 32 << 30):
        gpu = GpuScheduler(Freezer(), capacity_bytes=capacity)
        gpu.start_check("a", lambda: None, 1 << 30)
        alone, later = threading.Event(), threading.Event()
        threading.Thread(target=gpu.start_check, args=("alone", alone.set, ALL_MEMORY)).start()
        assert not alone.wait(0.3)
        gpu.release("a")
        assert alone.wait(5)
        threading.Thread(target=gpu.start_check, args=("later", later.set, 0)).start()
        assert not later.wait(0.3)
        gpu.release("alone")
        assert later.wait(5)


def test_each_gpu_has_its_own_windows():
    """Several GPUs of one host (kbx.driver.pool): one scheduler per GPU, so a window on one never
    waits for, or freezes anything of, another."""
    freezers = [Freezer(), Freezer()]
    gpus = [GpuScheduler(f) for f in freezers]
    inside_second = threading.Event()
    with gpus[0].exclusive("a"):

        def other():
            with gpus[1].exclusive("b"):
                inside_second.set()

        threading.Thread(target=other).start()
        assert inside_second.wait(2)  # while the first GPU's window is still open
        assert freezers[0].frozen and freezers[1].log[0] == ("freeze", "b")
