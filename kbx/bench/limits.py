"""`python -m kbx.bench limits RESULTS.json ...`: how near measured shapes came to the device's limits.

What the margins of kbx.core.roofline (BANDWIDTH_MARGIN, COMPUTE_MARGIN) rest on. For every timed shape
of `eval --json` files (their `device` names the GPU; `--hardware NAME` for kbx.evaluate's lists, which
do not), its GB/s and TFLOP/s as a share of the device's ceiling with no margin: the HBM peak plus the
L2 over the shape's time, and the peak of its inputs' types (the task's, for records older than the
per-shape types). A share above 1 + margin is what kbx flags `timing_suspect`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kbx.core import hardware as hw
from kbx.core import roofline

TOP = 12  # shapes listed per figure


@dataclasses.dataclass(frozen=True)
class ShapeShare:
    source: str  # the results file
    gpu: str  # its hardware profile
    task: str
    shape: str
    status: str
    gbps: float
    tflops: float
    bandwidth_share: float  # of the ceiling with no margin
    compute_share: float


def _profile(path: Path, data, hardware: str) -> hw.Hardware:
    gpu_name = data.get("device", "") if isinstance(data, dict) else ""
    profile = hw.profile_for(gpu_name) if gpu_name else hw.load_profiles().get(hardware)
    if profile is None or not profile.peak_bw_gbs:
        raise ValueError(f"{path}: no hardware profile for its GPU {gpu_name!r}; name one with --hardware")
    return profile


def device_line(path: Path, hardware: str = "") -> str:
    """The device bandwidths an eval --json file measured (kbx.bench.suite.stream_gbps) against its HBM peak."""
    data = json.loads(path.read_text())
    profile = _profile(path, data, hardware)
    measured = {p: data.get(f"{p}_gbps", 0.0) for p in ("copy", "write", "read")} if isinstance(data, dict) else {}
    figures = ", ".join(f"{p} {v:,.0f} GB/s ({v / profile.peak_bw_gbs:.3f})" for p, v in measured.items() if v)
    return f"{path.name}: {profile.name}, HBM peak {profile.peak_bw_gbs:,.0f} GB/s; measured {figures or 'nothing'}"


def shares(path: Path, hardware: str = "") -> list[ShapeShare]:
    """Every timed shape of one results file, against its GPU's profile."""
    from kbx.tasks import discover

    data = json.loads(path.read_text())
    profile = _profile(path, data, hardware)
    records = [r for run in data["runs"] for r in run["records"]] if isinstance(data, dict) else data
    tasks = discover()
    out = []
    for r in records:
        dtypes = tasks[r["task"]].spec.dtypes if r["task"] in tasks else ()
        for s in r.get("shapes") or []:
            ms = s["kernel_ms_median"]
            if not (ms and ms > 0):
                continue
            bandwidth = roofline.bandwidth_limit(profile, ms, margin=0.0)
            compute = roofline.compute_limit(profile, s.get("dtypes") or dtypes, margin=0.0)
            out.append(ShapeShare(path.name, profile.name, r["task"], s["shape"], r["status"], s["gbps"], s["tflops"],
                                  s["gbps"] / bandwidth.value, s["tflops"] / compute.value))  # fmt: skip
    return out


def report(paths: list[str], hardware: str = "") -> str:
    """The highest shares per figure (each task and shape once, at its highest) and what the margins flag."""
    rows = [row for p in paths for row in shares(Path(p), hardware)]
    lines = [device_line(Path(p), hardware) for p in paths] + [f"{len(rows)} timed shapes in {len(paths)} files"]
    for figure, margin in (("bandwidth_share", roofline.BANDWIDTH_MARGIN), ("compute_share", roofline.COMPUTE_MARGIN)):
        best: dict[tuple, ShapeShare] = {}
        for row in rows:
            key = (row.gpu, row.task, row.shape)
            if key not in best or getattr(row, figure) > getattr(best[key], figure):
                best[key] = row
        ranked = sorted(best.values(), key=lambda row: -getattr(row, figure))
        flagged = [row for row in ranked if getattr(row, figure) > 1 + margin]
        lines.append(f"\n{figure}: highest {getattr(ranked[0], figure):.3f} of the ceiling; margin {margin:.0%} "
                     f"flags {len(flagged)} of {len(ranked)} shapes")  # fmt: skip
        for row in ranked[:TOP]:
            lines.append(f"  {getattr(row, figure):.3f}  {row.gpu:6s} {row.task:45s} {row.shape:18s} {row.status:15s} "
                         f"{row.gbps:8,.0f} GB/s {row.tflops:8,.1f} TFLOP/s  ({row.source})")  # fmt: skip
    return "\n".join(lines)
