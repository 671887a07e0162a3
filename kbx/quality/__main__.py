"""`python -m kbx.quality [--json] [--category C]` lists tasks; `check` self-checks them; `audit` audits tolerances
(`audit --tail N`: an honest TF32 kernel's error over N seeds of each random case, kbx.quality.tail); `memory`
measures their peak GPU memory (on a GPU) for the evaluator's admission."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from kbx.tasks.registry import MAX_PERF_SHAPES, TaskError, discover, select

# The audit is mostly elementwise float64 work on a few MB: on a shared CPU more threads only
# contend (measured 10x slower with 2 threads than 1 at load average 14).
AUDIT_CPU_THREADS = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbx.quality", description=__doc__)
    parser.add_argument("command", nargs="?", choices=["list", "check", "audit", "memory"], default="list")
    parser.add_argument("--json", action="store_true", help="print one JSON record per task (list)")
    parser.add_argument("--category", default="all", help="only this category (case-insensitive)")
    parser.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    parser.add_argument("--perf", action="store_true",
                        help="check, audit: also run the references at every perf shape (GPU-sized: slow on a CPU)")  # fmt: skip
    parser.add_argument("--first-perf", action="store_true",
                        help="audit: also the first perf shape, the one the judge checks for correctness")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="audit, memory: where references run (cpu, cuda)")
    parser.add_argument("--no-tf32", action="store_true", help="audit: skip the TF32 model of matrix products")
    parser.add_argument("--jobs", type=int, default=1, help="audit: tasks audited in parallel (CPU processes)")
    parser.add_argument("--tail", type=int, default=0, metavar="SEEDS",
                        help="audit: instead of the table, the TF32 error's tail over SEEDS seeds of each random "
                             "case (exit status 1 if a seed exceeds its allowance)")  # fmt: skip
    parser.add_argument("--tail-model", default="exact", choices=["exact", "truncating", "expert"],
                        help="audit --tail: operands rounded to TF32 (cuBLAS), truncated (Triton's tl.dot), or the "
                             "expert kernel itself (on a GPU)")  # fmt: skip
    parser.add_argument("--case", default="all",
                        help="audit --tail: only the case of this name (default: every random case)")
    parser.add_argument("--out", default="",
                        help="audit: write the markdown table here (docs/TOLERANCES.md; on a GPU e.g. "
                             "docs/TOLERANCES_H100.md)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        tasks = select(discover(), args.task, args.category)
    except TaskError as exc:
        print(f"kbx.quality: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "check":
        return run_check(tasks, perf=args.perf)
    if args.command == "audit" and args.tail:
        return run_tail(tasks, args.tail, args.tail_model, args.case)
    if args.command == "audit":
        if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
            print(f"kbx.quality: error: --out {args.out}: its directory does not exist", file=sys.stderr)
            return 2
        perf_shapes = MAX_PERF_SHAPES if args.perf else int(args.first_perf)
        return run_audit(tasks, args.device, perf_shapes, not args.no_tf32, args.out, max(1, args.jobs), argv)
    if args.command == "memory":
        return run_memory(tasks, args.device)
    if args.json:
        print(json.dumps([task_record(t) for t in tasks], indent=1))
    else:
        print_table(tasks)
    return 0


def task_record(t) -> dict:
    s = t.spec
    return {"id": t.id, "category": t.category, "stem": t.stem, "entry": s.entry, "dtypes": list(s.dtypes),
            "version": s.version, "cases": len(s.cases), "perf_shapes": len(s.perf), "has_expert": bool(t.expert_path),
            "stochastic": s.stochastic is not None, "signature": s.signature, "description": s.description,
            "notes": s.notes}  # fmt: skip


def print_table(tasks) -> None:
    rows = [("id", "dtypes", "cases", "perf", "expert", "version")]
    rows += [(t.id, ",".join(t.spec.dtypes), str(len(t.spec.cases)), str(len(t.spec.perf)),
              "yes" if t.expert_path else "-", str(t.spec.version)) for t in tasks]  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    categories = sorted({t.category for t in tasks})
    print(f"\n{len(tasks)} tasks in {len(categories)} categories, {sum(bool(t.expert_path) for t in tasks)} with expert kernels")


def run_memory(tasks, device: str) -> int:
    """Measure every task's peak on this GPU and merge it into kbx.driver.memory.PEAKS_PATH under the card's
    name; on an otherwise idle GPU, since the context's share is read from the device's used memory."""
    import torch

    from kbx.core.telemetry import Telemetry
    from kbx.driver.memory import PEAKS_PATH, SIDES, measure, save_peaks

    if not (device.startswith("cuda") and torch.cuda.is_available()):
        print("kbx.quality: error: memory measures GPU memory: run it with --device cuda on a GPU", file=sys.stderr)
        return 2
    index = torch.device(device).index or 0
    name = Telemetry(index).name() or torch.cuda.get_device_name(index)
    table = measure(tasks, device)
    for task_id, peak in sorted(table.tasks.items(), key=lambda kv: -kv[1].peak_bytes):
        print(f"{peak.peak_bytes / 2**30:8.2f} GiB  {task_id}  ({peak.case})")
    save_peaks(name, table)
    most = max((p.peak_bytes for p in table.tasks.values()), default=0)
    print(f"\n{len(table.tasks)} tasks on {name}: context {table.context_bytes / 2**30:.2f} GiB, largest peak "
          f"{most / 2**30:.1f} GiB (an attempt reserves the context and {SIDES}x its peak); written to {PEAKS_PATH}")
    return 0


def run_tail(tasks, seeds: int, model: str, case: str) -> int:
    """Print each selected case's tail; exit 1 if any seed exceeds its allowance, 2 if nothing was selected."""
    import torch

    from kbx.quality.tail import cases_of, run_tails

    if seeds < 1 or not any(cases_of(t, case) for t in tasks):
        print(f"kbx.quality: error: --tail needs a positive number of seeds and a random case (--case {case}) "
              "of a selected task", file=sys.stderr)  # fmt: skip
        return 2
    if model == "expert" and not torch.cuda.is_available():
        print("kbx.quality: error: --tail-model expert runs the expert kernels: it needs a CUDA GPU", file=sys.stderr)
        return 2
    tails = run_tails(tasks, seeds, model, case)
    over = [t for t in tails if t.over]
    print(f"\n{len(tails)} cases over {seeds} seeds each; {len(over)} with a seed over its allowance")
    return 1 if over else 0


def run_check(tasks, perf: bool) -> int:
    from kbx.quality.check import check_task

    failed = 0
    for t in tasks:
        r = check_task(t, perf=perf)
        mark = "ok  " if r.ok else "FAIL"
        print(f"{mark} {r.task:55s} {r.cases:3d} runs  {r.total_s:6.2f}s  slowest {r.slowest_case} {r.slowest_s:.2f}s",
              flush=True)  # fmt: skip
        for p in r.problems:
            print(f"     - {p}")
        failed += not r.ok
    print(f"\n{len(tasks) - failed} of {len(tasks)} tasks pass the self-check")
    return 1 if failed else 0


def audit_device(device: str) -> tuple[str, str]:
    """The document's title and its device line: on a GPU the card and the TF32 settings the references
    ran with (torch's defaults, as the judge leaves them), since those decide an honest kernel's error."""
    import torch

    if not device.startswith("cuda"):
        return "Tolerance audit", device
    name = torch.cuda.get_device_name(torch.device(device))
    matmul = "on" if torch.backends.cuda.matmul.allow_tf32 else "off"
    conv = "on" if torch.backends.cudnn.allow_tf32 else "off"
    where = (f"{device}, {name}; references with matmul TF32 {matmul} and cuDNN convolution TF32 {conv}, as the "
             "judge runs them; the TF32 column runs both in TF32, as Triton's tl.dot does by default")  # fmt: skip
    return f"Tolerance audit on {name}", where


def run_audit(tasks, device: str, perf_shapes: int, tf32: bool, out: str, jobs: int, argv=None) -> int:
    """Print one line per task (and per case that is not ok), write the table, exit 1 if a contract case fails."""
    import concurrent.futures
    import multiprocessing

    import torch

    from kbx.quality.audit import FAILING, audit_in_worker
    from kbx.quality.audit_report import render

    if device.startswith("cuda") and not torch.cuda.is_available():
        print("kbx.quality: error: --device cuda needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = []
    # spawned workers: a forked child cannot use a CUDA context its parent may already hold
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        threads = AUDIT_CPU_THREADS if device == "cpu" else max(1, (os.cpu_count() or 1) // jobs)
        futures = [pool.submit(audit_in_worker, t.id, device, perf_shapes, tf32, threads) for t in tasks]
        for t, future in zip(tasks, futures, strict=True):
            task_rows, seconds = future.result()
            rows += task_rows
            _print_task(t.id, task_rows, seconds)
    perf = {0: "no perf shapes", 1: "the first perf shape"}.get(perf_shapes, "every perf shape")
    scope = f"{len(tasks)} tasks; correctness cases, {perf}" + ("" if tf32 else "; TF32 model off")
    if out:
        title, where = audit_device(device)
        command = " ".join(["python -m kbx.quality", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
        text = render(rows, where, scope, torch.__version__, command=command, title=title)
        tmp = f"{out}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)  # a failed audit never leaves a half-written table
    failing = [r for r in rows if not r.extra and r.verdict in FAILING]
    extra = [r for r in rows if r.extra and r.verdict in FAILING]
    print(f"\n{len(rows)} cases audited; {len(failing)} contract cases fail ({len(extra)} extra cases fail, reported apart)")
    return 1 if failing else 0


def _print_task(task_id: str, rows, seconds: float) -> None:
    from kbx.quality.audit import OK

    bad = [r for r in rows if r.verdict != OK]
    print(f"{'ok  ' if not bad else 'note'} {task_id:55s} {len(rows):3d} cases  {seconds:6.2f}s", flush=True)
    for r in bad:
        print(f"     - {r.case}{' (extra)' if r.extra else ''}: {r.verdict} [{r.judged}] {r.note}", flush=True)

if __name__ == "__main__":
    sys.exit(main())
