"""On a GPU machine: does where an expert's output (or input) lands in device memory move its GPU time?

Why: two GPU-bound conv fusions moved 10-19 % between the two runs of the full suite on an H200
(2026-12-04, docs/BENCHMARKS.md), with a small spread within each run, while their baselines and the other
conv experts repeated within 0.5 %. Measured alone, neither other CUDA contexts (idle or frozen) nor where
their inputs lay moved them by more than 0.8 %; but processes with different allocation histories gave
7.28, 7.37 and 7.61-7.70 ms for the same kernel and inputs. A worker of the suite has run many tasks
before, so the caching allocator hands each expert's output a block that differs from run to run. This
script holds blocks of the output's size alive so that each next output lands in a new block, then does
the same for the inputs, and times 15 calls per placement (CUDA events after an L2 flush and a GPU sleep,
as kbx's timing makes them), with the perf seed kbx uses.

    PYTHONPATH=. python3 scripts/placement_probe.py [OUT_DIR]     (writes OUT_DIR/placement_probe.json)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

from kbx.contract.timing_policy import TimingPolicy
from kbx.tasks.inputs import make_generator
from kbx.tasks.registry import default_tasks_dir, expert_entry, load_task_id

TASKS = ("Fusion/fused_relu_max_pool2d_conv2d", "Fusion/fused_dropout_relu_batch_norm_conv2d",
         "Fusion/fused_gelu_conv2d")  # the last: a conv expert that repeated within 0.5 % (control)  # fmt: skip
PLACEMENTS = 8
CALLS = 15
SLEEP_CYCLES = 1_000_000  # about 0.5 ms of GPU sleep before each call, so the launch is hidden


def median_ms(fn, call, flush: torch.Tensor) -> tuple[float, object]:
    out = fn(*call.args, **call.kwargs)  # warm-up, and the output whose block the next calls reuse
    samples = []
    for _ in range(CALLS):
        del out
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        out = fn(*call.args, **call.kwargs)
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples), out


def moved_inputs(call):
    """The same values in new blocks (the blocks of the previous copy stay held by the caller)."""
    args = tuple(a.clone() if torch.is_tensor(a) else a for a in call.args)
    kwargs = {k: v.clone() if torch.is_tensor(v) else v for k, v in call.kwargs.items()}
    return type(call)(args, kwargs)


def probe(task_id: str, flush: torch.Tensor) -> list[dict]:
    info = load_task_id(default_tasks_dir(), task_id)
    fn = expert_entry(info)
    case = info.spec.perf[-1]
    call = info.spec.make_inputs(case.params, make_generator(TimingPolicy().seed, "cuda"), "cuda")
    rows, held = [], []
    for what in ("output", "inputs"):
        for i in range(PLACEMENTS):
            if what == "inputs" and i:
                held.append(call)
                call = moved_inputs(call)
            ms, out = median_ms(fn, call, flush)
            rows.append({"task": task_id, "shape": case.name, "moved": what, "placement": i, "ms": round(ms, 4),
                         "out_ptr_mib": out.data_ptr() >> 20})  # fmt: skip
            print(rows[-1], flush=True)
            if what == "output":
                held.append(out)  # the next output cannot take this block
            del out
    return rows


def main() -> None:
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    flush = torch.empty(TimingPolicy().flush_l2_bytes // 4, dtype=torch.int32, device="cuda")
    rows = []
    for task_id in TASKS:
        rows += probe(task_id, flush)
        torch.cuda.empty_cache()
    summary = {}
    for task_id in TASKS:
        for what in ("output", "inputs"):
            ms = [r["ms"] for r in rows if r["task"] == task_id and r["moved"] == what]
            summary[f"{task_id} {what}"] = {"min_ms": min(ms), "max_ms": max(ms),
                                            "spread_pct": round(100 * (max(ms) - min(ms)) / min(ms), 2)}  # fmt: skip
    result = {"device": torch.cuda.get_device_name(), "rows": rows, "summary": summary}
    (out_dir / "placement_probe.json").write_text(json.dumps(result, indent=1))
    for key, figures in summary.items():
        print(f"{key:60s} " + "  ".join(f"{k} {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
