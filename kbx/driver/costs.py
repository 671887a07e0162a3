"""Longest first: a run ends when its slowest attempt does, so the attempts that take longest start
first (longest-processing-time scheduling).

What an attempt at a task costs is learnt from earlier runs on the same device: the wall seconds of
the task's last attempt, kept per device name in COSTS_PATH. A task never seen keeps its place in
the input, ahead of the known ones (it may be slow); on a first run the order is the input's.

Why: on an H100 (2026-11-27), `LinearAlgebra/eig` took 48-50 s from start to record and, started
late in a 70-kernel run's interleaved order, finished last in every run; the two-GPU run's
attempts summed 1,367 s over 16 slots, 85 s if packed, and took 121 s.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

COSTS_PATH = Path(".kbx_cache") / "attempt_costs.json"


class AttemptCosts:
    """Each task's last attempt's wall seconds on one device ("cpu", or the GPU's NVML name)."""

    def __init__(self, device: str, path: Path = COSTS_PATH) -> None:
        self.device, self.path = device, Path(path)
        self.seconds: dict[str, float] = dict(_read(self.path).get(device, {}))

    def order(self, task_ids: Sequence[str]) -> list[int]:
        """Indices of `task_ids` in the order to start them: unknown tasks first, in input order,
        then the known ones from the longest down (ties in input order)."""
        unknown = [i for i, t in enumerate(task_ids) if t not in self.seconds]
        known = [i for i, t in enumerate(task_ids) if t in self.seconds]
        known.sort(key=lambda i: -self.seconds[task_ids[i]])  # stable: ties keep the input's order
        return unknown + known

    def note(self, task_id: str, wall_s: float) -> None:
        self.seconds[task_id] = round(float(wall_s), 3)

    def save(self) -> None:
        """Merge into the file (other devices' costs kept), written whole or not at all. The costs
        only order work, so a store that cannot be written is left as it was."""
        with contextlib.suppress(OSError):
            data = _read(self.path)
            data[self.device] = {**data.get(self.device, {}), **self.seconds}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
            os.replace(tmp, self.path)


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
