"""`python -m kbx.bench table RESULTS.json ... --out docs/EXPERTS.md`: the expert table, from bench results.

Reads the JSON that `python -m kbx.bench eval --json` writes: the expert kernels (`--method reference`)
on one or more GPUs, and optionally `torch.compile` of the task references (`--method inductor`) on the
same GPUs. Writes markdown: per task its status; per GPU the speedup over eager (the evaluator's geometric
mean over the task's perf shapes), the speedup over torch.compile (geometric mean over the shapes both
timed of Inductor's time over the expert's) and the % of roofline (the best shape's time against the
larger of bytes / peak bandwidth and FLOPs / peak compute of the GPU's profile, kbx.core.roofline); and a
one-line note on the algorithm, read from the expert file's docstring. Then per GPU: the geometric mean
over timed experts, and every expert below SLOW_SPEEDUP, slowest first, each with the `Speed:`
paragraph of its expert file's docstring (the reason it is slow). Results of the CPU interpreter carry no
timings; the table says so rather than showing speedups.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
import re
import statistics
from pathlib import Path

from kbx.core import hardware as hw
from kbx.core.record import ShapeTiming
from kbx.core.roofline import classify

SLOW_SPEEDUP = 0.5  # experts below this speedup over eager need a reason in their file (issue 18)
NOTE_CHARS = 160  # an algorithm note is cut to this many characters
REVIEW_PREFIX = "speedup"  # a timing_suspect record flagged only for a high speedup is counted (bench.py's rule)
METHODS = ("reference", "inductor")
ELEMENTWISE = re.compile(r"\belementwise\b|\bstreaming pass\b", re.IGNORECASE)
SPEED_PREFIX = "Speed:"
LIST_MARK = re.compile(r"^\(?\d+[.)]\s+")  # "1. " or "(1) " opening an enumerated paragraph
SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<=\.)\s+")  # a period and space, not in "e.g."


class TableError(ValueError):
    """A results file cannot be read as `kbx.bench eval` results; the message names the file."""


@dataclasses.dataclass(frozen=True)
class Results:
    """One results file: the records of one method on one device."""

    path: str
    gpu: str  # the hardware profile's name (h100, h200), else the device name as reported (cpu)
    method: str
    records: dict[str, dict]
    hardware: hw.Hardware | None  # the profile, for the roofline; None when no profile matches


def load_results(path: str) -> Results:
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TableError(f"{path}: cannot read results: {exc}") from None
    if not isinstance(report, dict) or not ("runs" in report or "partial" in report) or "device" not in report:
        raise TableError(f"{path}: not the JSON of `python -m kbx.bench eval --json` (no device and runs)")
    runs = report.get("runs") or []
    records = runs[0]["records"] if runs else report["partial"]["records"]
    method = report.get("method", "reference")  # results from before --method were the experts
    if method not in METHODS:
        raise TableError(f"{path}: method {method!r} is not one of {', '.join(METHODS)}")
    profile = _profile(report["device"])
    return Results(path, profile.name if profile else report["device"], method, {r["task"]: r for r in records},
                   profile)  # fmt: skip


def _profile(device: str) -> hw.Hardware | None:
    for profile in hw.load_profiles().values():
        if profile.nvml_match and profile.nvml_match.lower() in device.lower():
            return profile
    return None


def counted(record: dict | None) -> bool:
    """Correct and timed: ok, or flagged only for a speedup above the review threshold (not for host time)."""
    if not record or not record.get("speedup"):
        return False
    return record["status"] == "ok" or (record["status"] == "timing_suspect"
                                        and record["reason"].startswith(REVIEW_PREFIX))  # fmt: skip


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def speedup_over(record: dict, other: dict) -> float | None:
    """Geometric mean over the shapes both timed of other's time / record's time (None if none shared)."""
    mine = {s["shape"]: s["kernel_ms_median"] for s in record.get("shapes", []) if s["kernel_ms_median"] > 0}
    ratios = [s["kernel_ms_median"] / mine[s["shape"]] for s in other.get("shapes", [])
              if s["shape"] in mine and s["kernel_ms_median"] > 0]  # fmt: skip
    return geomean(ratios) if ratios else None


def roofline_fraction(record: dict, hardware: hw.Hardware | None, dtypes) -> tuple[float, bool] | None:
    """The best shape's attained fraction of its roofline bound, max(bandwidth, compute) utilisation, and
    whether the compute peak is TF32's: an fp32 kernel that passes the fp32 peak on some shape runs on
    tensor cores (TF32 matrix products are within the fp32 tasks' tolerance), so the TF32 peak bounds all
    its shapes."""
    if hardware is None or not record.get("shapes"):
        return None
    fields = {f.name for f in dataclasses.fields(ShapeTiming)}
    shapes = [ShapeTiming(**{k: v for k, v in s.items() if k in fields}) for s in record["shapes"]]
    utils = [classify(s, hardware, dtypes) for s in shapes]
    tf32 = hardware.peak_tf32_tflops > 0 and any(u["compute_util"] > 1.0 for u in utils)
    best = None
    for shape, u in zip(shapes, utils, strict=True):
        compute = shape.tflops / hardware.peak_tf32_tflops if tf32 else u["compute_util"]
        util = max(u["bw_util"], compute)
        if not math.isnan(util) and (best is None or util > best):
            best = util
    return None if best is None else (best, tf32)


@dataclasses.dataclass(frozen=True)
class ExpertNotes:
    algorithm: str  # one line; "elementwise" for an elementwise kernel; "" without a docstring
    speed: str  # the `Speed:` paragraph, "" when the file has none


def expert_notes(path: str) -> ExpertNotes:
    """The algorithm line and the speed reason from an expert file's docstring (parsed, never imported)."""
    try:
        doc = ast.get_docstring(ast.parse(Path(path).read_text())) or ""
    except (OSError, SyntaxError):
        return ExpertNotes("", "")
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n") if p.strip()]
    speed = next((p[len(SPEED_PREFIX):].strip() for p in paragraphs if p.startswith(SPEED_PREFIX)), "")
    if not paragraphs:
        return ExpertNotes("", speed)
    head, _, rest = paragraphs[0].partition(": ")
    if not head.startswith("Expert kernel"):
        text = paragraphs[0]
    else:  # "Expert kernel(s) for X: <algorithm>. ..." or a title line, the algorithm in the next paragraph
        text = rest or (paragraphs[1] if len(paragraphs) > 1 else "")
    sentence = SENTENCE_END.split(LIST_MARK.sub("", text))[0]
    if ELEMENTWISE.search(sentence):
        return ExpertNotes("elementwise", speed)
    return ExpertNotes(sentence if len(sentence) <= NOTE_CHARS else sentence[: NOTE_CHARS - 1] + "…", speed)


def _names(paths: str) -> str:
    return " + ".join(f"`{Path(p).name}`" for p in paths.split(" + "))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def _pct(value: tuple[float, bool] | None) -> str:
    return "-" if value is None else f"{value[0]:.0%}" + (" (TF32 peak)" if value[1] else "")


def _status(record: dict | None) -> str:
    if record is None:
        return "not run"
    if record["status"] == "timing_suspect" and counted(record):
        return "timing_suspect (> 10x, flagged for review; counted)"
    return record["status"]


def build_table(results: list[Results], tasks: dict) -> str:
    """The markdown of docs/EXPERTS.md. `tasks` is the registry ({id: TaskInfo}); every task with an
    expert gets a row, 'not run' where no results file has it."""
    experts = {r.gpu: r for r in results if r.method == "reference"}
    compiled = {r.gpu: r for r in results if r.method == "inductor"}
    gpus = sorted(experts)
    timed = [g for g in gpus if any(counted(rec) for rec in experts[g].records.values())]
    ids = sorted(t for t, info in tasks.items() if info.expert_path)
    notes = {t: expert_notes(tasks[t].expert_path) for t in ids}
    lines = ["# Expert kernels: status and speed", "",
             "Generated by `python -m kbx.bench table` (kbx/bench/table.py) from "
             + ", ".join(f"{_names(r.path)} ({r.method} on {r.gpu}, {len(r.records)} records)" for r in results)
             + "; do not edit by hand. How to produce the inputs: docs/BENCHMARKS.md, \"The expert table\".", ""]  # fmt: skip
    lines += _summary(experts, compiled, timed, notes)
    header = ["task", "status"] + [f"x eager {g.upper()}" for g in timed]
    header += [f"x compile {g.upper()}" for g in timed if g in compiled]
    header += [f"% roofline {g.upper()} (best shape)" for g in timed] + ["algorithm"]
    lines += ["", "## Per task", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for t in ids:
        statuses = {g: _status(experts[g].records.get(t)) for g in gpus}
        status = next(iter(statuses.values())) if len(set(statuses.values())) == 1 else \
            ", ".join(f"{g}: {s}" for g, s in statuses.items())  # fmt: skip
        row = [t, status or "not run"]
        row += [_x(experts[g].records[t]["speedup"]) if counted(experts[g].records.get(t)) else "-" for g in timed]
        for g in timed:
            if g in compiled:
                mine, theirs = experts[g].records.get(t), compiled[g].records.get(t)
                row.append(_x(speedup_over(mine, theirs)) if counted(mine) and counted(theirs) else "-")
        row += [_pct(roofline_fraction(experts[g].records[t], experts[g].hardware, tasks[t].spec.dtypes))
                if counted(experts[g].records.get(t)) else "-" for g in timed]  # fmt: skip
        row.append(notes[t].algorithm)
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def _summary(experts: dict, compiled: dict, timed: list[str], notes: dict) -> list[str]:
    lines = ["## Summary", ""]
    for g, r in sorted(experts.items()):
        statuses: dict[str, int] = {}
        for rec in r.records.values():
            statuses[rec["status"]] = statuses.get(rec["status"], 0) + 1
        lines.append(f"- {g}: {len(r.records)} experts judged; statuses "
                     + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items())) + ".")  # fmt: skip
    if not timed:
        lines += ["", "No timings: these results come from a CPU (the Triton interpreter), where kbx judges "
                      "correctness but does not time kernels. Speedups need `python -m kbx.bench eval --json` on a GPU."]  # fmt: skip
        return lines
    for g in timed:
        speed = {t: rec["speedup"] for t, rec in experts[g].records.items() if counted(rec)}
        slow = sum(v < SLOW_SPEEDUP for v in speed.values())
        line = (f"- **{g.upper()}**: geometric mean speedup over eager **{geomean(list(speed.values())):.2f}x** over "
                f"{len(speed)} timed experts; {slow} below {SLOW_SPEEDUP}x")  # fmt: skip
        if g in compiled:
            over = [v for t, rec in experts[g].records.items() if counted(rec) and counted(compiled[g].records.get(t))
                    and (v := speedup_over(rec, compiled[g].records[t])) is not None]  # fmt: skip
            line += f"; over torch.compile {geomean(over):.2f}x over {len(over)} tasks" if over else ""
        lines.append(line + ".")
    lines += _by_category(experts, timed)
    for g in timed:
        slow = sorted((rec["speedup"], t) for t, rec in experts[g].records.items()
                      if counted(rec) and rec["speedup"] < SLOW_SPEEDUP)  # fmt: skip
        unexplained = sum(not (t in notes and notes[t].speed) for _, t in slow)
        lines += ["", f"### Below {SLOW_SPEEDUP}x on {g.upper()}: {len(slow)}, slowest first ({unexplained} without "
                      f"a `{SPEED_PREFIX}` reason in the expert file)", "", "| task | x eager | why |", "|---|---|---|"]  # fmt: skip
        for value, t in slow:
            why = notes[t].speed if t in notes and notes[t].speed else f"no `{SPEED_PREFIX}` paragraph in the expert file yet"
            lines.append(f"| {t} | {value:.2f}x | {_cell(why)} |")
    return lines


def _by_category(experts: dict, timed: list[str]) -> list[str]:
    """Per category and GPU: timed experts, their geometric mean speedup and how many are slower than eager."""
    header = ["category"] + [f"{g.upper()} {col}" for g in timed for col in ("timed", "geomean", "slower than eager")]
    lines = ["", "### By category", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    categories = sorted({t.split("/")[0] for g in timed for t in experts[g].records})
    for category in categories + ["all"]:
        row = [category]
        for g in timed:
            values = [rec["speedup"] for t, rec in experts[g].records.items()
                      if counted(rec) and category in ("all", t.split("/")[0])]  # fmt: skip
            slower = sum(v < 1.0 for v in values)
            row += [str(len(values)), f"{geomean(values):.2f}x", f"{slower} ({slower / len(values):.0%})"] \
                if values else ["0", "-", "-"]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return lines


def merge_parts(results: list[Results]) -> list[Results]:
    """One Results per (GPU, method): files of one method on one GPU (a suite run in parts, e.g. by
    --category) are merged; a task judged in two of them is an error, since either could be meant."""
    merged: dict[tuple[str, str], Results] = {}
    for r in results:
        key = (r.gpu, r.method)
        if key not in merged:
            merged[key] = r
            continue
        first = merged[key]
        twice = sorted(set(first.records) & set(r.records))
        if twice:
            raise TableError(f"{twice[0]} is in both {first.path} and {r.path} ({r.method} on {r.gpu}): give it once")
        merged[key] = dataclasses.replace(first, path=f"{first.path} + {r.path}", records={**first.records, **r.records})
    return list(merged.values())


def write_table(paths: list[str], out: str) -> str:
    """Reads the results, writes the table to `out` (atomically; "" prints it) and returns it."""
    from kbx.tasks import discover

    if not paths:
        raise TableError("no results files given: python -m kbx.bench table RESULTS.json [RESULTS.json ...]")
    results = [load_results(p) for p in paths]
    results = merge_parts(results)
    if not any(r.method == "reference" for r in results):
        raise TableError("no expert results (--method reference) among the files: the table is about the experts")
    text = build_table(results, discover())
    if out:
        tmp = Path(out).with_name(Path(out).name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, out)
    return text
