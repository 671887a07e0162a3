"""On a GPU machine: does another process's queued GPU work fool kbx's quiet probe?

Why: in the twentieth session's H200 run (docs/BENCHMARKS.md) every redone attempt showed about 2.3 ms of host
time beyond the GPU's in each repetition (one time slice of another CUDA context), although the window's probe
had found the GPU quiet. A frozen process's kernels already queued keep running through a window. This script
lets a second process queue about 6 s of matmuls and stop launching, as a frozen one would, and meanwhile
measures: the share of single probes (kbx.sandbox.timing.gpu_is_quiet, QUIET_POLL_S apart, as wait_until_quiet
makes them) that look quiet; the share of three back-to-back probes that all do; and the host time beyond the
GPU's of repetitions made as a window makes them (sleep, op, synchronise). Then the same on the idle GPU.

    PYTHONPATH=. python3 scripts/foreign_queue_probe.py [OUT_DIR]     (writes OUT_DIR/foreign_queue_probe.json)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

FOREIGN_MATMULS = 400  # fp32 8192^3 without TF32: about 16 ms each on an H100/H200, so about 6 s queued
PROBE_SECONDS = 0.6  # of single probes, then of bursts
BURST = 3  # back-to-back probes that must all look quiet
REPS = 100
REP_SLEEP_CYCLES = 300_000  # about 0.15 ms: a short sleep before each repetition, as kbx's are now
N = 1 << 25


def foreign() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.randn(8192, 8192, device="cuda")
    torch.cuda.synchronize()
    for _ in range(FOREIGN_MATMULS):
        x @ x
    print("queued", flush=True)
    torch.cuda.synchronize()


def measure(x: torch.Tensor) -> dict:
    from kbx.contract.timing_policy import TimingPolicy
    from kbx.sandbox import timing

    pol = TimingPolicy()
    end, single = time.perf_counter() + PROBE_SECONDS, []
    while time.perf_counter() < end:
        single.append(timing.gpu_is_quiet(pol))
        time.sleep(timing.QUIET_POLL_S)
    end, burst = time.perf_counter() + PROBE_SECONDS, []
    while time.perf_counter() < end:
        burst.append(all(timing.gpu_is_quiet(pol) for _ in range(BURST)))
        time.sleep(timing.QUIET_POLL_S)
    excess = []
    for _ in range(REPS):
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        torch.cuda._sleep(REP_SLEEP_CYCLES)
        torch.abs(x)
        stop.record()
        torch.cuda.synchronize()
        excess.append((time.perf_counter() - t0) * 1e3 - start.elapsed_time(stop))
    return {"single_quiet_share": sum(single) / len(single), "single_probes": len(single),
            "burst_quiet_share": sum(burst) / len(burst), "bursts": len(burst),
            "rep_excess_ms_median": statistics.median(excess), "rep_excess_ms_p90": sorted(excess)[int(0.9 * REPS)]}


def main() -> None:
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    x = torch.randn(N, device="cuda")
    torch.cuda.synchronize()
    other = subprocess.Popen([sys.executable, __file__, "--foreign"], stdout=subprocess.PIPE, text=True)
    if other.stdout.readline().strip() != "queued":
        sys.exit("the foreign process did not start")
    t0 = time.perf_counter()
    busy = measure(x)
    busy["measured_in_s"] = time.perf_counter() - t0  # under FOREIGN_MATMULS' ~6 s, or the queue had drained
    other.wait()
    idle = measure(x)
    result = {"device": torch.cuda.get_device_name(), "foreign_queue": busy, "idle": idle}
    (out_dir / "foreign_queue_probe.json").write_text(json.dumps(result, indent=1))
    for label, figures in (("foreign queue running", busy), ("idle GPU", idle)):
        print(f"{label:22s} " + "  ".join(f"{k} {v:.3g}" for k, v in figures.items()))


if __name__ == "__main__":
    foreign() if sys.argv[1:] == ["--foreign"] else main()
