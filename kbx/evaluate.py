"""`python -m kbx.evaluate PRED.jsonl [--hardware cpu|auto] [--json OUT]`: judge stored predictions.

No Hydra and no MLflow: one record per input line, in input order, as a JSON list. Lines naming a
task kbx does not have get status `unknown_task`; a malformed file is an error before any work.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

from kbx import hardware as hw
from kbx.errors import EXIT_USER_ERROR, USER_ERRORS
from kbx.eval.evaluator import Attempt, EvalSettings, Evaluator
from kbx.eval.record import EvalRecord, Status
from kbx.methods.predictions import read_predictions
from kbx.tasks.registry import discover
from kbx.worker.sandbox import MODES, NAMESPACES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbx.evaluate", description=__doc__)
    parser.add_argument("predictions", help="JSONL file: {file|task, predict[, round]} per line")
    parser.add_argument("--hardware", default="auto", help="cpu, auto (detect the GPU), or a profile name")
    parser.add_argument("--json", dest="json_out", default="", help="write the records here (default: stdout)")
    parser.add_argument("--workers", type=int, default=2, help="attempts judged concurrently")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per attempt for correctness")
    parser.add_argument("--sandbox", default=NAMESPACES, choices=MODES,
                        help="isolation of candidates (docs/SECURITY.md); none runs them without it")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        records = evaluate_file(args.predictions, args.hardware, args.workers, args.timeout, args.sandbox)
    except USER_ERRORS as exc:
        print(f"kbx.evaluate: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    text = json.dumps(records, indent=1)
    if args.json_out:
        tmp = args.json_out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, args.json_out)  # never leave a half-written result file
    else:
        print(text)
    counts = collections.Counter(r["status"] for r in records)
    print("  ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f"  (sandbox: {args.sandbox})", file=sys.stderr)
    return 0


def evaluate_file(path: str, hardware_name: str, workers: int, timeout_s: float, sandbox: str = NAMESPACES) -> list[dict]:
    lines = read_predictions(path)
    tasks = discover()
    profiles = hw.load_profiles()
    requested = profiles.get(hardware_name) or hw.Hardware(name="auto", kind="auto")
    if hardware_name not in profiles and hardware_name != "auto":
        raise hw.HardwareError(f"unknown hardware {hardware_name!r}; valid: auto, {', '.join(profiles)}")
    hardware = hw.resolve(requested, profiles)
    settings = EvalSettings(device=hardware.device, gpu_index=hardware.gpu_index, workers=workers,
                            check_timeout_s=timeout_s, sandbox=sandbox)  # fmt: skip
    known = [(i, line) for i, line in enumerate(lines) if line.task in tasks]
    attempts = [Attempt(tasks[line.task], line.code, f"line{line.line}") for _, line in known]
    with Evaluator(settings) as evaluator:
        judged = dict(zip((i for i, _ in known), evaluator.evaluate(attempts), strict=True))
    out = []
    for i, line in enumerate(lines):
        record = judged.get(i) or EvalRecord(task=line.task, task_version=0, status=Status.UNKNOWN_TASK,
                                             reason=f"kbx has no task {line.task!r}", label=f"line{line.line}",
                                             sandbox=sandbox)  # fmt: skip
        out.append({"line": line.line, "round": line.round, **record.to_dict()})
    return out


if __name__ == "__main__":
    sys.exit(main())
