"""`python -m kbx.tasks [--json] [--category C]` lists tasks; `python -m kbx.tasks check` self-checks them."""

from __future__ import annotations

import argparse
import json
import sys

from kbx.tasks.registry import TaskError, discover, select


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbx.tasks", description=__doc__)
    parser.add_argument("command", nargs="?", choices=["list", "check"], default="list")
    parser.add_argument("--json", action="store_true", help="print one JSON record per task (list)")
    parser.add_argument("--category", default="all", help="only this category (case-insensitive)")
    parser.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    parser.add_argument("--perf", action="store_true",
                        help="check: also run the references at perf shapes (GPU-sized: slow on a CPU)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        tasks = select(discover(), args.task, args.category)
    except TaskError as exc:
        print(f"kbx.tasks: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "check":
        return run_check(tasks, perf=args.perf)
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


def run_check(tasks, perf: bool) -> int:
    from kbx.tasks.check import check_task

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


if __name__ == "__main__":
    sys.exit(main())
