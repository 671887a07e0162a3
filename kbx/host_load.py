"""How busy the host was over a stretch of wall time: the driver process's own CPU seconds and the
share of every CPU's time that was busy (Linux /proc/stat).

An attempt costs more with several GPUs busy than with one (1.13x on two H200s, 1.66x on four
H100s, 2026-11-27), and one driver process runs every GPU's attempt threads. These two figures say
which was the shared resource: the host's CPUs (busy near 100 %) or the driver (its CPU seconds
near the wall time: one core, one interpreter lock).
"""

from __future__ import annotations

import os
import resource
import time

PROC_STAT = "/proc/stat"
BUSY_FIELDS = 8  # user nice system idle iowait irq softirq steal (guest time is counted inside user)
IDLE, IOWAIT = 3, 4  # their positions among those fields


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
