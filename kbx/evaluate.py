"""`python -m kbx.evaluate PRED.jsonl [--hardware cpu|auto|NAME] [--json OUT]`: judge stored predictions.

No Hydra and no MLflow: one record per input line, in input order, as a JSON list. Lines naming a
task kbx does not have get status `unknown_task`; a malformed file, an unwritable output or a
limit out of range is an error before any work. With --json the list is rewritten atomically as
records finish, so Ctrl-C (or a crash) keeps every finished record.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import sys
import threading
import time

from kbx.contract.attempt import Attempt
from kbx.core import hardware as hw
from kbx.core import provenance
from kbx.core.errors import EXIT_USER_ERROR, USER_ERRORS, ConfigError
from kbx.core.interrupt import exit_interrupted
from kbx.core.record import EvalRecord, Status
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.driver.limits import DEFAULT_CHECK_TIMEOUT_S, DEFAULT_TIME_TIMEOUT_S, scaled_timeout_s
from kbx.job import preflight
from kbx.methods.predictions import read_predictions
from kbx.protocol import SANDBOX_MODES, SANDBOX_NAMESPACES
from kbx.tasks.registry import discover

PROG = "kbx.evaluate"
CLI_OPTIONS = ("--hardware {}", "--hardware auto", "--force")  # see kbx.core.hardware.resolve
WRITE_INTERVAL_S = 1.0  # the output file is rewritten at most this often while records come in
POLL_S = 0.2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__)
    parser.add_argument("predictions", help="JSONL file: {file|task, predict[, round]} per line")
    parser.add_argument("--hardware", default="auto", help="cpu, auto (detect the GPU), or a profile name")
    parser.add_argument("--force", action="store_true", help="label results with --hardware even if that GPU is absent")
    parser.add_argument("--json", dest="json_out", default="", help="write the records here (default: stdout)")
    parser.add_argument("--workers", type=int, default=None,
                        help="attempts judged concurrently (default: the hardware profile's eval_defaults: "
                             "8 on an H100, 2 on the CPU)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=None,
                        help=f"seconds per attempt for correctness (default {DEFAULT_CHECK_TIMEOUT_S:g} on a GPU, "
                             "5x that under the CPU interpreter; see kbx/driver/limits.py)")  # fmt: skip
    parser.add_argument("--allow-empty", action="store_true", help="an empty predictions file is no error")
    parser.add_argument("--sandbox", default=SANDBOX_NAMESPACES, choices=SANDBOX_MODES,
                        help="isolation of candidates (docs/SECURITY.md); none runs them without it")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        plan = prepare(args)
    except USER_ERRORS as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    return judge(plan, args.json_out)


class Plan:
    """What to judge, checked: the lines, their attempts, the evaluator's settings."""

    def __init__(self, lines, known, attempts, settings) -> None:
        self.lines, self.known, self.attempts, self.settings = lines, known, attempts, settings


def prepare(args) -> Plan:
    if args.json_out:
        preflight.check_output_file(args.json_out, "--json")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be a positive integer, got {args.workers}")
    if args.timeout is not None and not args.timeout > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    lines = read_predictions(args.predictions, allow_empty=args.allow_empty)
    profiles = hw.load_profiles()
    if args.hardware not in profiles and args.hardware != "auto":
        raise hw.HardwareError(f"unknown hardware {args.hardware!r}; valid: auto, {', '.join(profiles)}")
    requested = profiles.get(args.hardware) or hw.Hardware(name="auto", kind="auto")
    hardware = hw.resolve(requested, profiles, force=args.force, options=CLI_OPTIONS)
    check_s = args.timeout if args.timeout is not None else scaled_timeout_s(DEFAULT_CHECK_TIMEOUT_S, hardware.device)
    workers = args.workers if args.workers is not None else int(hw.eval_defaults(hardware)["workers"])
    settings = EvalSettings(device=hardware.device, gpu_index=hardware.gpu_index, workers=workers,
                            check_timeout_s=check_s, sandbox=args.sandbox,
                            time_timeout_s=scaled_timeout_s(DEFAULT_TIME_TIMEOUT_S, hardware.device))  # fmt: skip
    tasks = discover()  # seconds: every task's spec is loaded, so after the cheap checks
    known = [i for i, line in enumerate(lines) if line.task in tasks]
    attempts = [Attempt(tasks[lines[i].task], lines[i].code, f"line{lines[i].line}") for i in known]
    return Plan(lines, known, attempts, settings)


def judge(plan: Plan, json_out: str) -> int:
    """Judge in a background thread; the main thread writes records as they come and owns Ctrl-C."""
    done: dict[int, dict] = {}
    known = set(plan.known)
    for i, line in enumerate(plan.lines):
        if i not in known:
            record = EvalRecord(task=line.task, task_version=0, status=Status.UNKNOWN_TASK,
                                reason=f"kbx has no task {line.task!r}", label=f"line{line.line}",
                                sandbox=plan.settings.sandbox, **provenance.collect(None))  # fmt: skip
            done[i] = _row(line, record)
    writer = _Writer(json_out)
    if not plan.attempts:  # nothing kbx can judge: no evaluator processes to start
        return _finish(writer, done, plan.settings.sandbox)
    finished: queue.Queue = queue.Queue()
    evaluator = Evaluator(plan.settings)

    def work() -> None:
        try:
            evaluator.evaluate(plan.attempts, on_record=lambda k, r: finished.put((plan.known[k], r)))
            finished.put(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which re-raises it
            finished.put(exc)

    threading.Thread(target=work, name="kbx-evaluate", daemon=True).start()
    try:
        while True:
            try:
                item = finished.get(timeout=POLL_S)
            except queue.Empty:
                writer.maybe_write(done)
                continue
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            i, record = item
            done[i] = _row(plan.lines[i], record)
            writer.maybe_write(done)
    except KeyboardInterrupt:
        writer.write(done)
        where = f"in {json_out}" if json_out else "printed above"
        note = f"{PROG}: interrupted: {len(done)} of {len(plan.lines)} records kept ({where})"
        exit_interrupted(note, evaluator.close)
    evaluator.close()
    return _finish(writer, done, plan.settings.sandbox)


def _finish(writer: _Writer, done: dict[int, dict], sandbox: str) -> int:
    writer.write(done)
    counts = collections.Counter(r["status"] for r in done.values())
    print("  ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f"  (sandbox: {sandbox})", file=sys.stderr)
    return 0


def _row(line, record: EvalRecord) -> dict:
    return {"line": line.line, "round": line.round, **record.to_dict()}


class _Writer:
    """The records so far, in input order, as one JSON list: rewritten atomically (never half-written)
    to the output file, at most every WRITE_INTERVAL_S while records come in; to stdout once, at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.written_at = 0.0
        self.count = 0

    def maybe_write(self, done: dict[int, dict]) -> None:
        if self.path and len(done) != self.count and time.monotonic() - self.written_at >= WRITE_INTERVAL_S:
            self.write(done)

    def write(self, done: dict[int, dict]) -> None:
        text = json.dumps([done[i] for i in sorted(done)], indent=1) + "\n"
        if not self.path:
            sys.stdout.write(text)
            return
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.path)
        self.written_at, self.count = time.monotonic(), len(done)


if __name__ == "__main__":
    sys.exit(main())
