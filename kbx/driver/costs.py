"""Longest first: a run ends when its slowest attempt does, so the attempts that take longest start
first (longest-processing-time scheduling).

What an attempt at a task costs is learnt from earlier runs on the same device: the wall seconds of
the task's last attempt, kept per device name in COSTS_PATH. Before a machine has run anything, the
costs kbx ships (SHIPPED_PATH, the expert suite's attempts on each supported GPU, written by
`python -m kbx.bench costs` from committed results) stand in: the device's own, or for a GPU kbx has
no figures for, each task's median over the GPUs it has (the order of tasks by cost is much the same
on every GPU). A task never seen keeps its place in the input, ahead of the known ones (it may be slow).

Why: on an H100 (2026-11-27), `LinearAlgebra/eig` took 48-50 s from start to record and, started
late in a 70-kernel run's interleaved order, finished last in every run; the two-GPU run's
attempts summed 1,367 s over 16 slots, 85 s if packed, and took 121 s. On a fresh H100 (2026-12-07,
no costs yet) the expert suite took 287.6 s in the input's order, where a simulation of the same
attempts' wall times gives 288.1 s in that order and 258.2 s longest first.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
from collections.abc import Sequence
from pathlib import Path

COSTS_PATH = Path(".kbx_cache") / "attempt_costs.json"
SHIPPED_PATH = Path(__file__).with_name("attempt_costs.json")
CPU = "cpu"  # the Triton interpreter's costs have nothing in common with a GPU's: none are shipped


class AttemptCosts:
    """Each task's last attempt's wall seconds on one device ("cpu", or the GPU's NVML name); the
    shipped costs (`shipped`) where this machine has not timed a task yet."""

    def __init__(self, device: str, path: Path = COSTS_PATH, shipped: Path = SHIPPED_PATH) -> None:
        self.device, self.path = device, Path(path)
        self.learnt: dict[str, float] = dict(_read(self.path).get(device, {}))  # timed here: what save() keeps
        self.seconds: dict[str, float] = {**shipped_costs(device, Path(shipped)), **self.learnt}

    def order(self, task_ids: Sequence[str]) -> list[int]:
        """Indices of `task_ids` in the order to start them: unknown tasks first, in input order,
        then the known ones from the longest down (ties in input order)."""
        unknown = [i for i, t in enumerate(task_ids) if t not in self.seconds]
        known = [i for i, t in enumerate(task_ids) if t in self.seconds]
        known.sort(key=lambda i: -self.seconds[task_ids[i]])  # stable: ties keep the input's order
        return unknown + known

    def note(self, task_id: str, wall_s: float) -> None:
        self.seconds[task_id] = self.learnt[task_id] = round(float(wall_s), 3)

    def save(self) -> None:
        """Merge into the file (other devices' costs kept), written whole or not at all. The costs
        only order work, so a store that cannot be written is left as it was."""
        with contextlib.suppress(OSError):
            data = _read(self.path)
            data[self.device] = {**data.get(self.device, {}), **self.learnt}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
            os.replace(tmp, self.path)


def shipped_costs(device: str, path: Path = SHIPPED_PATH) -> dict[str, float]:
    """The shipped costs for `device`: its own, else (a GPU) each task's median over the shipped GPUs."""
    shipped = _read(path)
    if device == CPU or device in shipped:
        return dict(shipped.get(device, {}))
    tasks = sorted({t for costs in shipped.values() for t in costs})
    return {t: statistics.median(c[t] for c in shipped.values() if t in c) for t in tasks}


def _read(path: Path) -> dict:
    """The stored costs; {} for a missing, unreadable or malformed file (they only order work)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {device: {t: float(s) for t, s in costs.items() if isinstance(s, (int, float))}
            for device, costs in data.items() if isinstance(costs, dict)}  # fmt: skip
