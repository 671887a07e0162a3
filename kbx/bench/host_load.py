"""How busy the host was over a stretch of wall time: the driver process's own CPU seconds, the
share of every CPU's time that was busy (Linux /proc/stat), and how often each GPU ran a kernel
(NVML, sampled).

An attempt costs more with several GPUs busy than with one (1.13x on two H200s, 1.66x on four
H100s, 2026-11-27), and one driver process runs every GPU's attempt threads. These figures say
which was the shared resource: the host's CPUs (busy near 100 %), the driver (its CPU seconds near
the wall time: one core, one interpreter lock) or a GPU (running a kernel nearly all the time).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable

PROC_STAT = "/proc/stat"
BUSY_FIELDS = 8  # user nice system idle iowait irq softirq steal (guest time is counted inside user)
IDLE, IOWAIT = 3, 4  # their positions among those fields
GPU_SAMPLE_S = 0.5  # how often GpuLoad reads each GPU's utilization (NVML's own period is 1/6 s to 1 s)


def cpu_jiffies(path: str = PROC_STAT) -> tuple[float, float] | None:
    """(busy, total) clock ticks of all CPUs since boot; None where the file is absent (not Linux)."""
    try:
        with open(path) as f:
            values = [float(v) for v in f.readline().split()[1 : 1 + BUSY_FIELDS]]
    except (OSError, ValueError):
        return None
    total = sum(values)
    return total - values[IDLE] - values[IOWAIT], total


def driver_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class HostLoad:
    """Started at construction; `figures()` gives the load since then (callable any number of times)."""

    def __init__(self) -> None:
        self.wall0 = time.perf_counter()
        self.driver0 = driver_cpu_s()
        self.jiffies0 = cpu_jiffies()

    def figures(self) -> dict:
        """driver_cpu_s, driver_cpu_share (of the wall), host_cpus, and host_cpu_busy_pct where /proc/stat
        is readable."""
        wall = time.perf_counter() - self.wall0
        driver = driver_cpu_s() - self.driver0
        out = {"driver_cpu_s": driver, "driver_cpu_share": driver / wall if wall > 0 else 0.0,
               "host_cpus": os.cpu_count() or 0}  # fmt: skip
        now = cpu_jiffies()
        if now is not None and self.jiffies0 is not None and now[1] > self.jiffies0[1]:
            out["host_cpu_busy_pct"] = 100.0 * (now[0] - self.jiffies0[0]) / (now[1] - self.jiffies0[1])
        return out


class GpuLoad:
    """Each GPU's kernel-busy share (`Telemetry.kernel_busy_pct`), read every `interval_s` by a daemon
    thread from construction to `stop()`. Whether a run's shared phase was bound by the GPU: an
    H100 run (2026-11-27) cut its host-memory stages by 420 s of attempt time and its wall did not
    move. `read(index)` returns a percentage, or a negative number where it cannot (no NVML, a CPU)."""

    def __init__(self, indices: list[int], read: Callable[[int], float] | None = None,
                 interval_s: float = GPU_SAMPLE_S) -> None:  # fmt: skip
        self.indices = list(indices)
        self.read = read or _nvml_reader()
        self.samples: dict[int, list[float]] = {i: [] for i in self.indices}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, args=(interval_s,), name="kbx-gpu-load", daemon=True)
        if self.indices:  # a CPU run has nothing to read
            self.thread.start()

    def _sample(self, interval_s: float) -> None:
        while not self.done.is_set():
            for i in self.indices:
                value = self.read(i)
                if value >= 0:
                    self.samples[i].append(value)
            self.done.wait(interval_s)

    def stop(self) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join()

    def figures(self) -> dict:
        """gpu_busy_pct: the mean reading of each GPU (in `indices` order), where every GPU gave some."""
        if not self.indices or not all(self.samples[i] for i in self.indices):
            return {}
        return {"gpu_busy_pct": [sum(self.samples[i]) / len(self.samples[i]) for i in self.indices]}


def _nvml_reader() -> Callable[[int], float]:
    from kbx.core.telemetry import Telemetry

    opened: dict[int, Telemetry] = {}

    def read(index: int) -> float:
        if index not in opened:
            opened[index] = Telemetry(index)
        return opened[index].kernel_busy_pct()

    return read
