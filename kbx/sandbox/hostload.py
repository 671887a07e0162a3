"""What the host was doing while a shape's repetitions ran, read inside the timed process.

A call bound by the host's launch rate (thousands of small kernels launched from Python) takes as
long as the host lets it: its time follows the core it ran on, that core's clock, and whoever else
wanted the CPU meanwhile. So each timed shape records, over its repetitions:

- `host_cpu`: the core the process ran on when they ended (-1 where /proc does not say);
- `host_mhz`: that core's clock then (NaN where cpufreq is not exposed, e.g. in many VMs);
- `host_preempted`: how often the process was preempted (involuntary context switches);
- `host_busy_pct`: how busy the whole host's CPUs were, in percent of all cores (NaN without /proc/stat);
- `host_steal_pct`: of that, the share a hypervisor gave to other guests (a VM's vCPUs run only when it lets them).

Linux only, as the sandbox is; every read degrades to its "unknown" value rather than failing a timing.
"""

from __future__ import annotations

import dataclasses
import math
import resource
from pathlib import Path

PROC_STAT = Path("/proc/stat")
SELF_STAT = Path("/proc/self/stat")
CPUFREQ = "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq"  # kHz
PROCESSOR_FIELD, STATE_FIELD = 39, 3  # proc(5)'s numbers, from 1: "processor", and "state", the first after ")"
IDLE_COLUMNS, STEAL_COLUMN, COLUMNS = (3, 4), 7, 8  # idle and iowait, steal, user..steal of /proc/stat's "cpu" line


@dataclasses.dataclass(frozen=True)
class HostSample:
    preempted: int  # involuntary context switches so far
    busy_jiffies: int  # the host's CPU time so far, all cores, spent other than idle
    steal_jiffies: int
    total_jiffies: int


def sample() -> HostSample:
    """This moment's counters (cheap: two small /proc reads and getrusage)."""
    return HostSample(resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw, *_jiffies())


def since(before: HostSample) -> dict:
    """kbx.contract.timing_policy.HOST_FIELDS, from `before` to now."""
    after = sample()
    spent = after.total_jiffies - before.total_jiffies

    def share(now: int, then: int) -> float:
        return 100.0 * (now - then) / spent if spent > 0 else math.nan

    core = current_cpu()
    return {"host_cpu": core, "host_mhz": cpu_mhz(core), "host_preempted": after.preempted - before.preempted,
            "host_busy_pct": share(after.busy_jiffies, before.busy_jiffies),
            "host_steal_pct": share(after.steal_jiffies, before.steal_jiffies)}


def current_cpu() -> int:
    """The core this process last ran on (-1 if unknown)."""
    try:
        fields = SELF_STAT.read_text().rsplit(")", 1)[1].split()
        return int(fields[PROCESSOR_FIELD - STATE_FIELD])
    except (OSError, IndexError, ValueError):
        return -1


def cpu_mhz(core: int) -> float:
    try:
        return int(Path(CPUFREQ.format(core)).read_text()) / 1e3 if core >= 0 else math.nan
    except (OSError, ValueError):
        return math.nan


def _jiffies() -> tuple[int, int, int]:
    """(busy, steal, total) jiffies of all cores from /proc/stat's first line; zeros if unreadable."""
    try:
        columns = [int(v) for v in PROC_STAT.read_text().split("\n", 1)[0].split()[1:]][:COLUMNS]
    except (OSError, ValueError):
        return 0, 0, 0
    columns += [0] * (COLUMNS - len(columns))
    total = sum(columns)  # guest time is already inside user
    return total - sum(columns[i] for i in IDLE_COLUMNS), columns[STEAL_COLUMN], total
