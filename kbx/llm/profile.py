"""What kbx measured of a kernel, per perf shape: the profile a method's feedback (method.feedback=P) shows.

For each perf shape kbx timed: the kernel's time against PyTorch eager's (both measured live, same GPU
and inputs) and, where known, against torch.compile's; its bandwidth and compute against the GPU's
peaks (kbx.core.roofline: the utilisation of each, and whether the shape is memory- or compute-bound
at its arithmetic intensity); how many Triton kernels one call launches; and whether the call was
launch-bound (the host's time to launch it, not the GPU's work, set its time: fewer launches, or
less Python per call, is then the way to go faster).

torch.compile's times come from `python -m kbx.bench eval --method inductor --json` results
(`prompt.compile_times`: docs/bench/results/ holds them for the H100 and H200); a file of another
GPU than the job's is not used, nor a task of another version than the one judged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from kbx.core import roofline
from kbx.core.errors import ConfigError
from kbx.core.hardware import Hardware
from kbx.core.record import EvalRecord, ShapeTiming

CompileTimes = dict[tuple[str, int], dict[str, float]]  # (task id, task version) -> perf shape -> torch.compile ms


def load_compile_times(paths: tuple[str, ...], hardware: Hardware, root: Path) -> CompileTimes:
    """torch.compile's median time per task and perf shape, from the results files measured on this
    hardware's GPU (its profile's NVML name in the file's `device`); relative paths from `root`."""
    times: CompileTimes = {}
    if not hardware.nvml_match:  # no GPU model to match (the CPU): nothing to read
        return times
    for name in paths:
        path = Path(name) if Path(name).is_absolute() else root / name
        try:
            report = json.loads(path.read_text())
            device = report["device"]
            runs = report.get("runs") or []
            records = runs[0]["records"] if runs else report["partial"]["records"]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ConfigError(f"prompt.compile_times: {path} is not `kbx.bench eval --json` results ({exc})") from None
        if hardware.nvml_match.lower() not in device.lower():
            continue
        for r in records:
            if r.get("label") == "inductor" and r.get("status") == "ok":
                times[(r["task"], int(r["task_version"]))] = {s["shape"]: s["kernel_ms_median"] for s in r["shapes"]}
    return times


def shape_profile(shape: ShapeTiming, hardware: Hardware, dtypes, compile_ms: float = math.nan) -> dict:
    """One perf shape's figures, as data (the trace's evaluation span carries them too)."""
    figures = roofline.classify(shape, hardware, dtypes)
    return {"shape": shape.shape, "kernel_ms": shape.kernel_ms_median, "eager_ms": shape.baseline_ms_median,
            "speedup": shape.speedup, "compile_ms": compile_ms, "gbps": shape.gbps, "tflops": shape.tflops,
            "bw_util": figures["bw_util"], "compute_util": figures["compute_util"], "roofline": figures["roofline"],
            "launches_per_call": shape.launches_per_call, "launch_ms": shape.launch_ms,
            "launch_bound": shape.host_bound}  # fmt: skip


def profile_lines(record: EvalRecord, hardware: Hardware, dtypes, compile_times: dict[str, float]) -> list[str]:
    """The per-shape block of the P feedback; `compile_times` is this task's (perf shape -> ms)."""
    if not record.shapes:
        why = record.timing_skipped_reason or "no perf shape was timed"
        return [f"No per-shape profile: {why}."]
    peak = roofline.peak_tflops(hardware, dtypes)
    limits = (f"{hardware.gpu_name or hardware.name}: {hardware.peak_bw_gbs:g} GB/s DRAM, {peak:g} TFLOP/s for "
              f"{'/'.join(dtypes)}" if hardware.peak_bw_gbs and peak else "no peaks known for this device")  # fmt: skip
    lines = [f"Per perf shape, as measured ({limits}):"]
    for s in record.shapes:
        p = shape_profile(s, hardware, dtypes, compile_times.get(s.shape, math.nan))
        lines.append(f"  {s.shape}: {_shape_line(p)}")
    return lines


def _shape_line(p: dict) -> str:
    parts = [f"{p['kernel_ms']:.4g} ms; eager {p['eager_ms']:.4g} ms (speedup {p['speedup']:.3g}x)"]
    if math.isnan(p["compile_ms"]):
        parts.append("torch.compile not known")
    elif p["kernel_ms"] > 0:
        parts.append(f"torch.compile {p['compile_ms']:.4g} ms (speedup {p['compile_ms'] / p['kernel_ms']:.3g}x)")
    parts.append(f"{p['gbps']:.4g} GB/s{_share(p['bw_util'])}, {p['tflops']:.4g} TFLOP/s{_share(p['compute_util'])}")
    parts.append(f"{p['roofline']}-bound" if p["roofline"] != roofline.UNKNOWN else "roofline class unknown")
    if not math.isnan(p["launches_per_call"]):
        parts.append(f"Triton launches per call: {p['launches_per_call']:.3g}")
    if p["launch_bound"]:
        parts.append(f"launch-bound: the host's {p['launch_ms']:.3g} ms to launch a call set its time, not the GPU")
    return "; ".join(parts)


def _share(util: float) -> str:
    return "" if math.isnan(util) else f" ({util * 100:.2g}% of peak)"
