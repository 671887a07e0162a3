"""What an attempt needs of its GPU's memory, so the workers in flight and the judges never exhaust it.

Each task's peak (its inputs, the reference's output and working memory: the largest over its
correctness cases and perf shapes) is measured once per GPU model, on that GPU, by `python -m
kbx.quality memory`, into PEAKS_PATH, with the memory one process's CUDA context takes there. An
attempt reserves its worker's context plus SIDES times the task's peak: the worker's copy (inputs,
the candidate's output and work) and its judge's (the same inputs, the reference). The scheduler
(kbx.driver.scheduler) starts an attempt only while the reservations of those in flight leave room
for it, and the reservation lasts until the attempt ends.

Why: on an H100 with 8 workers, a judge computing a reference at a perf shape tried to allocate
32 GiB while the workers held theirs, and the attempt was charged `reference_error`; a fixed floor of
free memory (`min_free_gpu_gb`) cannot tell a 4 KiB task from a 30 GiB one. A task the table does not
know (or knows at another version) reserves the context alone and is admitted by that floor, as
before. On an H200 (2026-11-29, docs/BENCHMARKS.md) a context took 0.70 GiB and the
largest peak was 8.2 GiB (Fusion/fused_relu_conv2d); 16 workers' reservations reached 116 of 126 GiB.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path

PEAKS_PATH = Path(__file__).with_name("peak_memory.json")
SIDES = 2  # copies of a task's peak an attempt may hold at once: its worker's and its judge's
MEASURE_SEED = 0  # inputs' values do not change their size; one draw per case is measured


@dataclasses.dataclass(frozen=True)
class TaskPeak:
    version: int
    peak_bytes: int
    case: str  # the case that needed it


@dataclasses.dataclass(frozen=True)
class PeakTable:
    """One GPU model's measured peaks (empty where none were measured)."""

    context_bytes: int = 0
    tasks: dict[str, TaskPeak] = dataclasses.field(default_factory=dict)
    measured_on: str = ""  # the GPU model measured (another than the one in use where it had none)

    def need_bytes(self, task_id: str, version: int) -> int:
        """An attempt's reservation: a worker's context, and SIDES x the task's peak where measured at
        this version (the context alone otherwise)."""
        return self.context_bytes + (SIDES * self.tasks[task_id].peak_bytes if self.known(task_id, version) else 0)

    def known(self, task_id: str, version: int) -> bool:
        peak = self.tasks.get(task_id)
        return peak is not None and peak.version == version


def load_peaks(gpu_name: str, path: Path = PEAKS_PATH) -> PeakTable:
    """The table for `gpu_name` (NVML's name of the card). A model not measured borrows another's (the
    first by name): a task's tensors take the same bytes on any card, and only the libraries'
    workspaces (cuBLAS, cuDNN) differ a little; `measured_on` says whose. Empty when the file has none.
    The file is kbx's own (committed): a malformed one is an error, not a silent loss of admission."""
    models = json.loads(path.read_text()) if path.exists() else {}
    name = gpu_name if gpu_name in models else min(models, default="")
    if not name:
        return PeakTable()
    entry = models[name]
    tasks = {t: TaskPeak(int(p["version"]), int(p["peak_bytes"]), str(p["case"])) for t, p in entry["tasks"].items()}
    return PeakTable(int(entry["context_bytes"]), tasks, name)


def save_peaks(gpu_name: str, table: PeakTable, path: Path = PEAKS_PATH) -> None:
    """Merge `table` into the file (other GPU models and other tasks kept), written whole or not at all."""
    data = json.loads(path.read_text()) if path.exists() else {}
    old = data.get(gpu_name, {"tasks": {}})
    tasks = {**old["tasks"], **{t: dataclasses.asdict(p) for t, p in table.tasks.items()}}
    data[gpu_name] = {"context_bytes": table.context_bytes, "tasks": dict(sorted(tasks.items()))}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def measure_context_bytes(device: str) -> int:
    """Device memory in use with this process's CUDA context made (cuBLAS's handle and workspace
    included) and no tensor live: one worker's or judge's fixed cost, read on an otherwise idle GPU
    (a candidate's Triton modules add kilobytes to it)."""
    import torch

    a = torch.ones(64, 64, device=device)
    (a @ a).sum().item()
    del a
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info(device)
    return int(total - free)


def measure_task_peak(info, device: str) -> TaskPeak:
    """The most memory allocated at once over the task's cases: its inputs made, its reference run
    (a reference that raises is part of the task: its peak until then counts)."""
    import torch

    from kbx.tasks.inputs import make_generator

    best = TaskPeak(info.spec.version, 0, "")
    for case in info.all_cases():
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        try:
            call = info.spec.make_inputs(case.params, make_generator(MEASURE_SEED, device), device)
            with torch.no_grad():
                out = info.spec.reference(*call.args, **call.kwargs)
            torch.cuda.synchronize(device)
            del out, call
        except torch.OutOfMemoryError:
            raise
        except Exception:  # the reference raising at a case is the task's (compared by type)
            pass
        peak = torch.cuda.max_memory_allocated(device) - base
        if peak > best.peak_bytes:
            best = TaskPeak(info.spec.version, int(peak), case.name)
    return best


def measure(tasks: Iterable, device: str) -> PeakTable:
    """Every task's peak on `device`, and the context's cost (measured first, before any tensor)."""
    context = measure_context_bytes(device)
    return PeakTable(context, {t.id: measure_task_peak(t, device) for t in tasks})
