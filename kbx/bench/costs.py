"""`python -m kbx.bench costs RESULTS... --out kbx/driver/attempt_costs.json`: the attempt costs kbx ships.

A fresh machine knows no task's cost, so its first run would start attempts in the input's order
(kbx.driver.costs); these are what it starts from instead. Each GPU's figure for a task is the
median wall time of the task's attempts over the `kbx.bench eval --json` files given (the expert
suite's, the default job's), keyed by the GPU's NVML name as the files record it.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

DECIMALS = 1  # seconds: an order needs no more


class CostsError(ValueError):
    """A results file that is not a `kbx.bench eval --json` report of a GPU."""


def costs_from_results(paths: list[Path]) -> dict[str, dict[str, float]]:
    """GPU name -> task -> median wall seconds over every run of every file of that GPU."""
    walls: dict[str, dict[str, list[float]]] = {}
    for path in paths:
        device, records = _records(path)
        for r in records:
            walls.setdefault(device, {}).setdefault(r["task"], []).append(float(r["wall_s"]))
    return {device: {t: round(statistics.median(w), DECIMALS) for t, w in sorted(tasks.items())}
            for device, tasks in sorted(walls.items())}  # fmt: skip


def _records(path: Path) -> tuple[str, list[dict]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CostsError(f"{path}: not a readable JSON file ({exc})") from None
    device = data.get("device") if isinstance(data, dict) else None
    if not isinstance(device, str) or not device or device == "cpu" or not isinstance(data.get("runs"), list):
        raise CostsError(f"{path}: not a `kbx.bench eval --json` report of a GPU (no device name or runs)")
    records = [r for run in data["runs"] for r in run.get("records", [])]
    if not records or not all(isinstance(r.get("task"), str) and isinstance(r.get("wall_s"), (int, float))
                              for r in records):  # fmt: skip
        raise CostsError(f"{path}: its records lack a task or a wall_s")
    return device, records


def write_costs(paths: list[str], out: str) -> str:
    """Write the costs to `out` (whole or not at all); a line saying what was written."""
    costs = costs_from_results([Path(p) for p in paths])
    tmp = Path(out).with_name(f".{Path(out).name}.tmp")
    tmp.write_text(json.dumps(costs, indent=1, sort_keys=True) + "\n")
    tmp.replace(out)
    return f"{out}: " + ", ".join(f"{d} ({len(t)} tasks)" for d, t in costs.items())
