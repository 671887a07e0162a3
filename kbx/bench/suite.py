"""`python -m kbx.bench eval`: how fast and how repeatable the evaluator is, on this machine.
(`python -m kbx.bench llm`: whether generation overlaps evaluation; see kbx.bench.llm.
`python -m kbx.bench table RESULTS.json ...`: docs/EXPERTS.md from eval results; see kbx.bench.table.
`python -m kbx.bench overhead`: what kbx.run costs over this benchmark; see kbx.bench.overhead.
`python -m kbx.bench traces`: what kbx.run with traces costs an LLM job; see kbx.bench.traces.
`python -m kbx.bench costs RESULTS.json ...`: the attempt costs a fresh machine starts from; see kbx.bench.costs.)

Judges every expert kernel (`--method inductor`: torch.compile of every such task's reference instead;
the report's `method` says which) (the full pipeline: worker, judge, timing) in `--runs` separate
evaluator instances and reports: (a) wall time per kernel and the split by stage, projected to the
whole suite (every task in the registry); (b) timing repeatability between runs, as the median and
p95 of the relative change of each shape's median; (c) for memory-bound shapes, the kernels' GB/s against the device's
measured copy bandwidth. Needs only torch, triton and kbx (no MLflow or Hydra), so it runs as is
on a bare GPU machine.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
import time
from pathlib import Path

from kbx.bench.host_load import GpuLoad, HostLoad
from kbx.contract.timing_policy import HOST_FIELDS
from kbx.core import hardware as hw
from kbx.core import provenance
from kbx.core.errors import EXIT_USER_ERROR, MethodError
from kbx.core.interrupt import exit_interrupted
from kbx.driver.watch import watch

COPY_BYTES = 1 << 30  # 1 GiB per copy direction when measuring device bandwidth
COPY_REPS = 20
STREAM_PATTERNS = ("copy", "write", "read")  # device bandwidths measured beside the kernels (stream_gbps)
HEARTBEAT_S = 20.0
# Per-attempt seconds summed over a run. wall_s is the attempts' whole time: redone_s (the tries
# redone before the last), then the last try's start_s, inputs_s, compile_s, check_s, judge_s and
# time_s (the rest: the driver reading the worker's events, the record). check_s includes time
# frozen (paused_s) for others' windows; time_s includes this attempt's own windows (exclusive_s),
# baseline_s and save_s (writing the perf outputs); judge_s includes judge_perf_s (checking them)
# and judge_wait_s (queueing for an idle judge); gpu_wait_s is queueing for windows.
STAGES = ("wall_s", "redone_s", "start_s", "inputs_s", "compile_s", "check_s", "paused_s", "judge_s",
          "judge_perf_s", "judge_wait_s", "gpu_wait_s", "baseline_s", "time_s", "save_s", "exclusive_s")  # fmt: skip
# Per run, beside the records: kbx.bench.host_load's figures, and the judges' start-up (judge_start_figures)
HOST_FIGURES = ("driver_cpu_s", "driver_cpu_share", "host_cpus", "host_cpu_busy_pct", "gpu_busy_pct",
                "judge_startup_s", "first_judge_s")  # fmt: skip
WINDOW_PARTS = ("quiet_wait_ms", "warmup_ms", "energy_ms", "refresh_ms")  # of a shape's windows, beside the calls
LARGEST_CHANGES = 10  # timed shapes listed with the largest change between two runs
OVERHEAD_OUT = "bench-out/overhead"  # overhead's --out when none is given
TRACES_OUT = "bench-out/traces"  # traces' --out when none is given


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    return COMMANDS[args.what](args, parser)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kbx.bench", description=__doc__)
    parser.add_argument("what", choices=sorted(COMMANDS),
                        help="eval: the evaluator; summary: eval's --summary from its --json file, a run "
                             "cut short included; llm: generation/evaluation overlap; "
                             "table: docs/EXPERTS.md from eval --json files (kbx.bench.table); "
                             "sandbox: the sandbox's cost per attempt; "
                             "quiet: honest kernels' verdicts beside background GPU work (GPU); "
                             "overhead: kbx.run's wall time over eval's on the same tasks; "
                             "limits: timed shapes against the device's limits (kbx.bench.limits); "
                             "costs: the attempt costs a fresh machine starts from, from eval --json files (kbx.bench.costs); "
                             "traces: an LLM job's wall time through kbx.run with traces on, over the bare evaluator and over traces off")  # fmt: skip
    parser.add_argument("results", nargs="*", help="table, limits: results files of eval --json (experts, and "
                                                   "inductor); summary: one such file; costs: the experts' files")  # fmt: skip
    parser.add_argument("--out", default="", help="table: write the markdown here (default: print it); "
                                                  "overhead: directory for logs and overhead.json "
                                                  f"(default {OVERHEAD_OUT})")  # fmt: skip
    parser.add_argument("--method", default="reference", choices=["reference", "inductor"],
                        help="eval: judge the expert kernels (reference) or torch.compile of the references")
    parser.add_argument("--mode", default="default", help="eval --method inductor: torch.compile mode")
    parser.add_argument("--pairs", type=int, default=20, help="sandbox: paired attempts (with and without)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="attempts in flight per GPU")
    parser.add_argument("--judges", type=int, default=0, help="eval: judges per GPU (0: the default)")
    parser.add_argument("--gpus", type=int, default=1, help="eval, overhead: GPUs of this host to spread attempts over")
    parser.add_argument("--limit", type=int, default=0, help="eval: at most this many kernels (categories interleaved)")
    parser.add_argument("--category", default="all")
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("--json", dest="json_out", default="")
    parser.add_argument("--summary", default="", help="eval: also write the figures alone (no per-attempt rows) "
                        "here, e.g. docs/bench/eval-h100-DATE.json")  # fmt: skip
    parser.add_argument("--tasks", type=int, default=8, help="llm, traces: tasks (with expert kernels) to run")
    parser.add_argument("--latency", type=float, default=2.0, help="llm: seconds per completion")
    parser.add_argument("--concurrency", type=int, default=4, help="llm: llm.concurrency")
    parser.add_argument("--rounds", type=int, default=2, help="llm, traces: refinement rounds")
    parser.add_argument("--rate-limited", type=float, default=0.0, help="llm: share of calls answered 429 once")
    parser.add_argument("--retry-after", type=float, default=0.0, help="llm: the 429s' Retry-After seconds (0: none)")
    parser.add_argument("--server-errors", type=float, default=0.0, help="llm: share of calls answered 500 once")
    parser.add_argument("--api-base", default="", help="llm: the model server to use instead of a scripted one "
                        "(it must answer each task with a kernel)")  # fmt: skip
    parser.add_argument("--hardware", default="auto", help="overhead: kbx.run's hardware profile; limits: "
                        "the profile of results files that do not name their GPU")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=1, help="overhead, traces: times each command is run")
    parser.add_argument("--commands", default="eval,run,run_existing",
                        help="overhead: which to time, of eval, run, run_existing, run_default "
                             "(figures already in --out are added to)")  # fmt: skip
    return parser


def _overhead(args, parser) -> int:
    from kbx.bench.overhead import COMMANDS as TIMED
    from kbx.bench.overhead import bench_overhead, format_overhead_report

    commands = tuple(c for c in args.commands.split(",") if c)
    if not commands or not set(commands) <= set(TIMED):
        parser.error(f"--commands: a comma-separated choice of {', '.join(TIMED)}")
    out = Path(args.out or OVERHEAD_OUT)
    report = bench_overhead(out, args.category, args.workers, args.hardware, args.repeats, commands,
                            tuple(args.task), args.gpus)
    print(format_overhead_report(report))
    return 0


def _traces(args, parser) -> int:
    from kbx.bench.traces import bench_traces, format_traces_report

    report = bench_traces(Path(args.out or TRACES_OUT), args.tasks, args.rounds, args.workers, args.repeats)
    return _print_report(args, report, format_traces_report)


def _costs(args, parser) -> int:
    from kbx.bench.costs import CostsError, write_costs

    if not args.results or not args.out:
        parser.error("costs: give the experts' eval --json files and --out (kbx/driver/attempt_costs.json)")
    try:
        print(write_costs(args.results, args.out))
    except CostsError as exc:
        print(f"kbx: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def _limits(args, parser) -> int:
    from kbx.bench.limits import report as limits_report

    try:
        print(limits_report(args.results, args.hardware))
    except (OSError, ValueError, KeyError) as exc:
        print(f"kbx: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def _summary(args, parser) -> int:
    if len(args.results) != 1 or not args.summary:
        parser.error("summary: one eval --json file and --summary OUT")
    report = with_partial_run(json.loads(Path(args.results[0]).read_text()))
    write_summary(report, args.summary, " ".join(sys.argv))
    print(format_report(report))
    return 0


def _table(args, parser) -> int:
    from kbx.bench.table import TableError, write_table

    try:
        text = write_table(args.results or ([args.json_out] if args.json_out else []), args.out)
    except TableError as exc:
        print(f"kbx: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    if not args.out:
        print(text, end="")
    return 0


def _quiet(args, parser) -> int:
    from kbx.bench.quiet import format_quiet_report, neighbour_runs, quiet_report
    from kbx.driver.evaluator import EvalSettings, Evaluator

    with Evaluator(EvalSettings(device="cuda", workers=args.workers)) as ev:
        walls: dict = {}
        report = quiet_report(neighbour_runs(ev, walls), walls)
    return _print_report(args, report, format_quiet_report)


def _sandbox(args, parser) -> int:
    from kbx.bench.sandbox import bench_sandbox, format_sandbox_report

    return _print_report(args, bench_sandbox(args.pairs), format_sandbox_report)


def _llm(args, parser) -> int:
    from kbx.bench.llm import bench_llm, format_llm_report

    report = bench_llm(args.tasks, args.latency, args.concurrency, args.workers, args.rounds,
                       args.rate_limited, args.retry_after, args.server_errors, args.api_base,
                       tuple(args.task))  # fmt: skip
    return _print_report(args, report, format_llm_report)


def _print_report(args, report: dict, render) -> int:
    """--json keeps the report; the rendering is printed."""
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    print(render(report))
    return 0


def _eval(args, parser) -> int:
    try:
        report = bench_eval(args.runs, args.workers, args.category, args.task, args.json_out, args.gpus, args.limit,
                            args.method, args.mode, args.judges)  # fmt: skip
    except MethodError as exc:
        print(f"kbx: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    print(format_report(report))
    if args.summary:
        write_summary(report, args.summary, " ".join(sys.argv))
    return 0


COMMANDS = {"eval": _eval, "summary": _summary, "llm": _llm, "table": _table, "sandbox": _sandbox,
            "quiet": _quiet, "overhead": _overhead, "limits": _limits,
            "traces": _traces, "costs": _costs}  # fmt: skip


def write_summary(report: dict, path: str, command: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(summary_data(report, command), indent=1) + "\n")


def with_partial_run(report: dict) -> dict:
    """An eval --json report whose last run was cut short by a time limit: that run's finished
    records become a run of their own, marked partial, its wall time the last record's; its
    kernels count is its own (s_per_kernel stays a rate over what finished)."""
    partial = report.pop("partial", None)
    if partial and partial.get("records"):
        report["runs"].append({"wall_s": partial.get("wall_s", 0.0), "records": partial["records"], "partial": True})
    return report


def bench_eval(runs: int, workers: int, category: str, task_ids: list[str], json_out: str = "", gpus: int = 1,
               limit: int = 0, method: str = "reference", mode: str = "default", judges: int = 0) -> dict:  # fmt: skip
    """Runs the benchmark; after every attempt and run it prints a line and rewrites `json_out`, so a
    benchmark cut short by a time limit still leaves its figures."""
    import torch

    from kbx.driver.evaluator import EvalSettings
    from kbx.tasks import discover, select

    tasks = interleave_categories([t for t in select(discover(), task_ids, category) if t.expert_path])
    tasks = tasks[:limit] if limit > 0 else tasks
    device = "cuda" if torch.cuda.is_available() else "cpu"
    names = hw.detect_gpus()
    attempts = bench_attempts(tasks, method, mode, device)
    settings = EvalSettings(device=device, workers=workers, judges=judges)
    report = {"device": names[0] if names else "cpu", "commit": provenance.kbx_commit(), "command": " ".join(sys.argv),
              "method": method, "gpus": gpus if device == "cuda" else 0,
              "workers_per_gpu": workers, "judges_per_gpu": settings.judge_count, "n_kernels": len(attempts),
              "runs": [],
              **{f"{p}_gbps": stream_gbps(p) if device == "cuda" else 0.0 for p in STREAM_PATTERNS},
              "ridge_flops_per_byte": ridge_point(names[0]) if names else 0.0}  # fmt: skip
    print(f"device {report['device']}, copy / write / read bandwidth {report['copy_gbps']:.0f} / "
          f"{report['write_gbps']:.0f} / {report['read_gbps']:.0f} GB/s, {len(attempts)} kernels", flush=True)
    for k in range(runs):
        report["runs"].append(_timed_run(k, settings, attempts, gpus if device == "cuda" else 0, report, json_out))
        if json_out:
            Path(json_out).write_text(json.dumps(report, indent=1))
    return report


def _timed_run(k: int, settings, attempts: list, gpus: int, report: dict, json_out: str) -> dict:
    """Run `k` of the benchmark: every attempt once, with the host's and GPUs' load beside it."""
    from kbx.driver.pool import open_evaluator

    progress = _RunProgress(k, report, json_out, gpus)
    try:
        with open_evaluator(settings, range(max(gpus, 1))) as ev:
            stop = watch(ev, HEARTBEAT_S, out=sys.stdout, prefix="  ")
            try:
                records = ev.evaluate(attempts, on_record=progress)
            except KeyboardInterrupt:
                stop.set()
                kept = f"in {json_out}" if json_out else "printed above (no --json)"
                exit_interrupted(f"kbx.bench: interrupted: run {k}'s {len(progress.done)} of {len(attempts)} records "
                                 f"kept ({kept})", ev.close)  # fmt: skip
            finally:
                stop.set()
            startups = ev.judge_startups()
    finally:
        progress.gpu_load.stop()
    return {"wall_s": time.perf_counter() - progress.started, "records": [r.to_dict() for r in records],
            **progress.load.figures(), **progress.gpu_load.figures(), **judge_start_figures(startups, progress.done)}


class _RunProgress:
    """One line per finished attempt, and the run so far rewritten to --json after each."""

    def __init__(self, k: int, report: dict, json_out: str, gpus: int) -> None:
        self.k, self.report, self.json_out = k, report, json_out
        self.started = time.perf_counter()
        self.done: list[dict] = []
        self.load = HostLoad()
        self.gpu_load = GpuLoad(list(range(gpus)))

    def __call__(self, i: int, r) -> None:
        why = f"  ({r.reason[:150]})" if r.status.value != "ok" else ""
        if r.harness_failures:  # kbx's own failures, redone: what a faster, steadier schedule must remove
            why += f"  (redone {r.harness_retries}x: {'; '.join(f[:120] for f in r.harness_failures)})"
        if r.status.value == "crashed" and r.output_tail:
            why += "\n      " + r.output_tail[-400:].replace("\n", "\n      ")
        print(f"run {self.k} +{time.perf_counter() - self.started:6.1f}s {r.task:40s} {r.status.value:14s} "
              f"check {r.check_s:5.2f}s (frozen {r.paused_s:5.2f}s) judge {r.judge_s:5.2f}s "
              f"baseline {r.baseline_s:5.2f}s time {r.time_s:5.2f}s alone {r.exclusive_s:5.2f}s "
              f"(longest {r.max_window_s:4.2f}s){why}", flush=True)  # fmt: skip
        self.done.append(r.to_dict())
        if self.json_out:  # partial runs too, so a benchmark cut short still leaves its figures
            partial = {"run": self.k, "wall_s": time.perf_counter() - self.started, "records": self.done,
                       **self.load.figures(), **self.gpu_load.figures()}  # fmt: skip
            Path(self.json_out).write_text(json.dumps({**self.report, "partial": partial}, indent=1))


def judge_start_figures(startups: list[dict[str, float]], finished: list[dict]) -> dict:
    """What the judges' start-up cost (median seconds per phase over the judges) and what their
    first requests cost: the median judge time of the first attempts to finish, one per judge,
    against the rest's (a first request on a GPU once took 10x a later one)."""
    phases = sorted({phase for startup in startups for phase in startup})
    k = len(startups)
    first, rest = [r["judge_s"] for r in finished[:k]], [r["judge_s"] for r in finished[k:]]
    return {"judge_startup_s": {p: statistics.median(s[p] for s in startups if p in s) for p in phases},
            "first_judge_s": {"attempts": len(first), "median": statistics.median(first) if first else 0.0,
                              "rest_median": statistics.median(rest) if rest else 0.0}}  # fmt: skip


def bench_attempts(tasks: list, method: str, mode: str, device: str) -> list:
    """The expert kernels of `tasks`, or (method inductor) torch.compile of their references, as attempts."""
    from kbx.contract.attempt import Attempt

    if method == "reference":
        return [Attempt(t, Path(t.expert_path).read_text(), "expert", expert=True) for t in tasks]
    from kbx.methods.inductor import build

    inductor = build(hw.Hardware(name=device, kind=device), mode)  # refuses a CPU and an unknown mode
    return [Attempt(t, p.code, p.label) for t in tasks for p in inductor.propose(t, 0, [])]


def interleave_categories(tasks: list) -> list:
    """One task of each category in turn, so a benchmark cut short still covers every category."""
    by_category: dict[str, list] = {}
    for t in sorted(tasks, key=lambda t: t.id):
        by_category.setdefault(t.category, []).append(t)
    queues = list(by_category.values())
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def stream_gbps(pattern: str) -> float:
    """Device bandwidth of one access pattern over COPY_BYTES, in bytes moved per second, median of
    COPY_REPS: "copy" (device to device: reads and writes, both counted), "write" (a fill) or "read"
    (a sum, whose result is one number). The HBM peak that kbx.core.roofline holds shapes to is what
    none of them may pass."""
    import torch

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src) if pattern == "copy" else src
    run = {"copy": lambda: dst.copy_(src), "write": lambda: src.fill_(1),
           "read": lambda: src.view(torch.float32).sum()}[pattern]  # fmt: skip
    times = []
    for _ in range(COPY_REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return (2 if pattern == "copy" else 1) * COPY_BYTES / statistics.median(times) / 1e9


def ridge_point(gpu_name: str) -> float:
    """FLOP/byte above which a shape is compute-bound, from the matching hardware profile (fp32)."""
    profile = hw.profile_for(gpu_name)
    return profile.peak_fp32_tflops * 1e12 / (profile.peak_bw_gbs * 1e9) if profile else 0.0


@functools.cache
def suite_size() -> int:
    """The tasks a full run judges (the registry's, dtype variants included): what a run's seconds
    per kernel are projected to."""
    from kbx.tasks import discover

    return len(discover())


def summarize(report: dict) -> dict:
    n = report["n_kernels"]
    runs = [_run_figures(run, n, report.get("gpus") or 1) for run in report["runs"]]
    first = report["runs"][0]
    out = {**runs[0], "runs": runs, "suite_projection_s": runs[0]["s_per_kernel"] * suite_size(),
           "statuses": _statuses(first["records"])}  # fmt: skip
    if len(report["runs"]) > 1:
        out["repeatability"] = repeatability(report["runs"][0]["records"], report["runs"][1]["records"])
    if report.get("copy_gbps"):
        out["bandwidth"] = bandwidth_fraction(first["records"], report["copy_gbps"], report["ridge_flops_per_byte"])
    return out


def _run_figures(run: dict, n: int, gpus: int) -> dict:
    records = run["records"]
    n = len(records) if run.get("partial") else n
    return {"wall_s": run["wall_s"], "s_per_kernel": run["wall_s"] / n if n else 0.0, "kernels": n,
            "partial": bool(run.get("partial")),
            "stages_s": {k: sum(r.get(k, 0.0) for r in records) for k in STAGES},
            "max_exclusive_s": max((r.get("max_window_s", 0.0) for r in records), default=0.0),
            "max_exclusive_per_attempt_s": max((r.get("exclusive_s", 0.0) for r in records), default=0.0),
            "exclusive_share": exclusive_share(run, gpus),
            "windows_s": window_split(records),
            **{k: run[k] for k in HOST_FIGURES if k in run}}  # fmt: skip


def _host_line(run: dict) -> str:
    if "driver_cpu_s" not in run:
        return ""  # a report from before kbx.bench.host_load
    busy = f", host CPUs busy {run['host_cpu_busy_pct']:.0f}%" if "host_cpu_busy_pct" in run else ""
    if "gpu_busy_pct" in run:
        busy += ", GPU running a kernel " + " / ".join(f"{pct:.0f}%" for pct in run["gpu_busy_pct"]) + " of the time"
    return (f"; driver CPU {run['driver_cpu_s']:.1f} s ({run['driver_cpu_share']:.0%} of the wall), "
            f"{run['host_cpus']} host CPUs{busy}")


def _judge_line(run: dict) -> str:
    if "first_judge_s" not in run:
        return ""  # a report from before the judges reported their start-up
    first, startup = run["first_judge_s"], run["judge_startup_s"]
    phases = ", ".join(f"{p[:-2]} {v:.2f}" for p, v in startup.items()) or "not reported"
    return (f"; judges' start-up (median s): {phases}; judge time of the first {first['attempts']} attempts "
            f"{first['median']:.2f} s (median), the rest {first['rest_median']:.2f} s")


def summary_data(report: dict, command: str) -> dict:
    """The benchmark's figures as data (docs/bench/eval-<device>-<date>.json): no per-attempt rows."""
    s = summarize(report)
    rep, bw = s.get("repeatability") or {}, s.get("bandwidth") or {}
    return {"device": report["device"], "commit": report.get("commit") or provenance.kbx_commit(), "date": time.strftime("%Y-%m-%d"),
            "command": report.get("command") or command,
            "kernels": report["n_kernels"], "workers_per_gpu": report.get("workers_per_gpu"),
            "judges_per_gpu": report.get("judges_per_gpu", 0),
            "statuses": s["statuses"],
            "runs": [{k: v for k, v in r.items()} for r in s["runs"]],
            "repeat_shapes": rep.get("shapes", 0),
            "repeat_median_pct": _pct(rep.get("median_rel_delta")),
            "repeat_p95_pct": _pct(rep.get("p95_rel_delta")),
            "repeat_gpu_bound_shapes": rep.get("gpu_bound_shapes", 0),
            "repeat_gpu_bound_median_pct": _pct((rep.get("gpu_bound") or {}).get("median_rel_delta")),
            "repeat_gpu_bound_p95_pct": _pct((rep.get("gpu_bound") or {}).get("p95_rel_delta")),
            "repeat_largest": rep.get("largest", []),
            "repeat_gpu_bound_largest": rep.get("gpu_bound_largest", []),
            **{f"{p}_gbps": report.get(f"{p}_gbps", 0.0) for p in STREAM_PATTERNS},
            "copy_bw_median_pct": _pct(bw.get("median_fraction")),
            "copy_bw_p25_pct": _pct(bw.get("p25_fraction"))}  # fmt: skip


def _gpu_bound_clause(rep: dict) -> str:
    fig = rep.get("gpu_bound")
    if not fig or rep["gpu_bound_shapes"] == rep["shapes"]:
        return ""  # every shape GPU-bound, or records from before ShapeTiming.host_bound
    return (f" (over the {rep['gpu_bound_shapes']} shapes neither run found host-bound: median "
            f"{fig['median_rel_delta']:.2%}, p95 {fig['p95_rel_delta']:.2%})")


def _pct(fraction: float | None) -> float | None:
    """A percentage, or JSON null where the figure was not measured (one run: no repeatability)."""
    return None if fraction is None else 100 * fraction


def window_split(records: list[dict]) -> dict:
    """Where the shapes' exclusive windows went, in seconds summed over both sides: the timed calls
    themselves (repetitions x median), waiting for other processes' queued work to drain, warming up,
    the energy burst, giving each repetition fresh inputs, and the rest (each repetition's sleep, flush and synchronisation, the checks
    around them). Why: on an H100 (2026-12-05) the calls were 31.7 s of 105.7 s of windows."""
    shapes = [s for r in records for s in r.get("shapes") or ()]
    held = sum(s.get("exclusive_ms", 0.0) for s in shapes)
    calls = sum(s.get("reps", 0) * _ms(s.get("kernel_ms_median")) + s.get("baseline_reps", 0)
                * _ms(s.get("baseline_ms_median")) for s in shapes)  # fmt: skip
    parts = {k: sum(s.get(k, 0.0) for s in shapes) for k in WINDOW_PARTS}
    split = {"held": held, "calls": calls, **{k[:-3]: v for k, v in parts.items()}}
    split["rest"] = held - calls - sum(parts.values())
    return {k: v / 1e3 for k, v in split.items()}


def _ms(value) -> float:
    """A stored median in ms, 0 where none was measured (None, or NaN from a record written as JSON)."""
    return value if isinstance(value, float | int) and math.isfinite(value) else 0.0


def exclusive_share(run: dict, gpus: int) -> float:
    """Share of the GPUs' wall time held alone (kernels' and baselines' windows): the serial part
    of the pipeline, which more workers cannot shorten."""
    exclusive = sum(r.get("exclusive_s", 0.0) for r in run["records"])
    return exclusive / (run["wall_s"] * gpus) if run["wall_s"] > 0 else 0.0


def repeatability(a: list[dict], b: list[dict]) -> dict:
    """|Δ median| / mean median for every shape both runs timed: median and p95 over shapes, and
    the largest changes with what each side measured; the same figures over the shapes that neither
    run found bound by the host's launch rate (ShapeTiming.host_bound): a host-bound call's time
    follows the host's load, which kbx does not control."""
    first = {(r["task"], s["shape"]): s for r in a for s in r["shapes"]}
    changes = []
    for r in b:
        for s in r["shapes"]:
            s0 = first.get((r["task"], s["shape"]))
            if s0 and s0["kernel_ms_median"]:
                m0, m1 = s0["kernel_ms_median"], s["kernel_ms_median"]
                changes.append({"task": r["task"], "shape": s["shape"], "delta": abs(m1 - m0) / ((m1 + m0) / 2),
                                "ms": [m0, m1], "reps": [s0.get("reps"), s.get("reps")],
                                "iqr_ms": [s0.get("kernel_ms_iqr"), s.get("kernel_ms_iqr")],
                                "budget_cut": [s0.get("budget_cut"), s.get("budget_cut")],
                                "shared": [s0.get("shared"), s.get("shared")],
                                "host_bound": [bool(s0.get("host_bound")), bool(s.get("host_bound"))],
                                "launch_ms": [s0.get("launch_ms"), s.get("launch_ms")],
                                "sm_clock_mhz": [s0.get("sm_clock_mhz"), s.get("sm_clock_mhz")],
                                **{k: [s0.get(k), s.get(k)] for k in HOST_FIELDS}})  # fmt: skip
    if not changes:
        return {"shapes": 0}
    gpu_bound = sorted((c for c in changes if not any(c["host_bound"])), key=lambda c: -c["delta"])
    return {"shapes": len(changes), **_median_p95([c["delta"] for c in changes]),
            "gpu_bound_shapes": len(gpu_bound), "gpu_bound": _median_p95([c["delta"] for c in gpu_bound]),
            "largest": sorted(changes, key=lambda c: -c["delta"])[:LARGEST_CHANGES],
            "gpu_bound_largest": gpu_bound[:LARGEST_CHANGES]}  # fmt: skip


def _change_line(c: dict) -> str:
    return (f"      {c['task']:40s} {c['shape']:20s} {c['delta']:6.1%}  {c['ms'][0]:.4g} -> {c['ms'][1]:.4g} ms "
            f"reps {c['reps']} iqr {c['iqr_ms']}{' host-bound' if any(c.get('host_bound', ())) else ''}")


def _median_p95(deltas: list[float]) -> dict:
    if not deltas:
        return {}
    deltas = sorted(deltas)
    return {"median_rel_delta": statistics.median(deltas),
            "p95_rel_delta": deltas[min(len(deltas) - 1, int(0.95 * len(deltas)))]}  # fmt: skip


def bandwidth_fraction(records: list[dict], copy_gbps: float, ridge: float) -> dict:
    """Per memory-bound task, the best shape's GB/s as a fraction of the copy bandwidth."""
    per_task = {}
    for r in records:
        mem = [s for s in r["shapes"] if s["gbps"] and (not ridge or s["tflops"] * 1e12 / (s["gbps"] * 1e9) < ridge)]
        if mem:
            per_task[r["task"]] = max(s["gbps"] for s in mem) / copy_gbps
    if not per_task:
        return {"tasks": 0}
    fractions = sorted(per_task.values())
    return {"tasks": len(per_task), "copy_gbps": copy_gbps, "median_fraction": statistics.median(fractions),
            "p25_fraction": fractions[int(0.25 * (len(fractions) - 1))], "per_task": per_task}  # fmt: skip


def _statuses(records: list[dict]) -> dict:
    out: dict[str, int] = {}
    for r in records:
        out[r["status"]] = out.get(r["status"], 0) + 1
    return out


def format_report(report: dict) -> str:
    s = summarize(report)
    lines = [f"device: {report['device']} x {report.get('gpus', 1)}, {report.get('workers_per_gpu', '?')} workers per GPU   "
             f"expert kernels: {report['n_kernels']}   statuses: {s['statuses']}"]  # fmt: skip
    for k, run in enumerate(s["runs"]):
        cut = f" (cut short: {run['kernels']} kernels)" if run["partial"] else ""
        lines.append(f"(a) run {k}{cut}: wall {run['wall_s']:.1f} s, {run['s_per_kernel']:.2f} s/kernel -> "
                     f"{run['s_per_kernel'] * suite_size() / 60:.1f} min for {suite_size()} tasks; GPU held alone "
                     f"{run['exclusive_share']:.0%} of the wall, longest window {run['max_exclusive_s']:.2f} s, most "
                     f"by one attempt {run['max_exclusive_per_attempt_s']:.2f} s; windows (s): "
                     + ", ".join(f"{k} {v:.1f}" for k, v in run["windows_s"].items()) + "; stage sums (s): "
                     + ", ".join(f"{k[:-2]} {v:.1f}" for k, v in run["stages_s"].items())
                     + _host_line(run) + _judge_line(run))  # fmt: skip
    rep = s.get("repeatability")
    if rep and rep.get("shapes"):
        lines.append(f"(b) repeatability over {rep['shapes']} shapes: median |delta| {rep['median_rel_delta']:.2%}, "
                     f"p95 {rep['p95_rel_delta']:.2%}" + _gpu_bound_clause(rep) + "; largest:")  # fmt: skip
        lines += [_change_line(c) for c in rep["largest"]]
        if rep.get("gpu_bound_shapes", rep["shapes"]) < rep["shapes"]:  # the host-bound ones can hide these
            lines.append("    largest among the shapes neither run found host-bound:")
            lines += [_change_line(c) for c in rep.get("gpu_bound_largest", [])]
    bw = s.get("bandwidth")
    if bw and bw.get("tasks"):
        lines.append(f"(c) memory-bound experts: median {bw['median_fraction']:.1%}, p25 {bw['p25_fraction']:.1%} of "
                     f"copy bandwidth {bw['copy_gbps']:.0f} GB/s over {bw['tasks']} tasks")  # fmt: skip
        lines += [f"      {t:40s} {f:.1%}" for t, f in sorted(bw["per_task"].items())]
    per_task = {r["task"]: r for r in report["runs"][0]["records"]}
    lines.append("per task (run 1): status, speedup, wall s")
    lines += [f"      {t:40s} {r['status']:14s} {r['speedup'] or float('nan'):6.2f}x {r['wall_s']:6.2f}"
              for t, r in sorted(per_task.items())]  # fmt: skip
    return "\n".join(lines)


