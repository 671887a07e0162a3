"""`python -m kbx.bench table`: docs/EXPERTS.md from bench results (kbx/bench/table.py).

The GPU fixtures are real: `kbx.bench eval --json` of 8 experts on an H100 (2026-11-25), and the
`kbx.evaluate` records of `torch.compile` of the same 8 references on the same H100, wrapped as a
bench report (docs/BENCHMARKS.md has the command). The CPU layer runs the real CLI end to end.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kbx.bench.suite import main as bench_main
from kbx.bench.table import TableError, build_table, counted, expert_notes, load_results, speedup_over, write_table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bench"
EXPERTS_H100 = str(FIXTURES / "h100_reference.json")
INDUCTOR_H100 = str(FIXTURES / "h100_inductor.json")


def _records(path):
    return {r["task"]: r for r in json.loads(Path(path).read_text())["runs"][0]["records"]}


def _row(table: str, task: str) -> list[str]:
    line = next(x for x in table.split("## Per task")[1].splitlines() if x.startswith(f"| {task} |"))
    return [c.strip() for c in line.strip("|").split(" | ")]


@pytest.fixture(scope="module")
def h100_table():
    return write_table([EXPERTS_H100, INDUCTOR_H100], "")


def test_summary_figures_are_those_of_the_records(h100_table):
    speeds = [r["speedup"] for r in _records(EXPERTS_H100).values()]
    geo = math.exp(sum(map(math.log, speeds)) / len(speeds))
    below = sum(v < 0.5 for v in speeds)
    assert f"geometric mean speedup over eager **{geo:.2f}x** over {len(speeds)} timed experts; {below} below 0.5x" \
        in h100_table  # fmt: skip
    slow = sorted((kv for kv in _records(EXPERTS_H100).items() if kv[1]["speedup"] < 0.5), key=lambda kv: kv[1]["speedup"])
    section = h100_table.split(f"### Below 0.5x on H100: {len(slow)}, slowest first")[1].split("## Per task")[0]
    assert [line.split(" | ")[0].strip("| ") for line in section.splitlines() if line.startswith("| ")][1:] == \
        [t for t, _ in slow]  # every expert below 0.5x, each with its reason; fmt: skip


def test_speedup_over_compile_is_the_ratio_of_times_on_shared_shapes(h100_table):
    mine, theirs = _records(EXPERTS_H100)["Convolution/conv2d"], _records(INDUCTOR_H100)["Convolution/conv2d"]
    ratios = [t["kernel_ms_median"] / m["kernel_ms_median"] for m, t in zip(mine["shapes"], theirs["shapes"], strict=True)]
    expected = math.exp(sum(map(math.log, ratios)) / len(ratios))
    assert abs(speedup_over(mine, theirs) - expected) < 1e-12
    row = _row(h100_table, "Convolution/conv2d")
    assert row[1:4] == ["ok", f"{mine['speedup']:.2f}x", f"{expected:.2f}x"]
    assert row[4].endswith("(TF32 peak)")  # past the fp32 peak on its largest shape: tensor cores
    assert _row(h100_table, "LinearAlgebra/solve")[3] == "-"  # Inductor's kernel there was a mismatch


def test_roofline_of_a_memory_bound_kernel_is_its_share_of_peak_bandwidth(h100_table):
    best = max(s["gbps"] for s in _records(EXPERTS_H100)["Activation/relu"]["shapes"])
    assert _row(h100_table, "Activation/relu")[4] == f"{best / 3350:.0%}"  # conf/hardware/h100.yaml: 3350 GB/s


def test_every_task_with_an_expert_has_a_row(h100_table):
    from kbx.tasks import discover

    rows = [x for x in h100_table.split("## Per task")[1].splitlines() if x.startswith("| ") and "/" in x]
    assert len(rows) == sum(1 for t in discover().values() if t.expert_path)
    assert _row(h100_table, "LinearAlgebra/eig")[1] == "not run"


def test_counted_takes_ok_and_fast_flagged_records_only():
    assert counted({"status": "ok", "speedup": 0.5, "reason": ""})
    assert counted({"status": "timing_suspect", "speedup": 16.0, "reason": "speedup 16.0x over eager exceeds 10x"})
    assert not counted({"status": "timing_suspect", "speedup": 3.0, "reason": "shape s: host wall time exceeds"})
    assert not counted({"status": "mismatch", "speedup": None, "reason": "case x"})
    assert not counted(None)


def _expert(tmp_path, name, doc):
    path = tmp_path / f"{name}.py"
    path.write_text(f'"""{doc}"""\n\nimport torch\n')
    return str(path)


def test_algorithm_note_and_speed_reason_from_the_docstring(tmp_path):
    colon = expert_notes(_expert(tmp_path, "a", "Expert kernels for X/y: blocked LU, e.g. with pivots. More.\n\n"
                                                "Speed: eager calls cuSOLVER; this reaches 20% of it."))  # fmt: skip
    assert colon.algorithm == "blocked LU, e.g. with pivots."
    assert colon.speed == "eager calls cuSOLVER; this reaches 20% of it."
    title = expert_notes(_expert(tmp_path, "b", "Expert kernel for X/y and its dtype variants.\n\n"
                                                "1. A tiled GEMM. 2. A row pass."))  # fmt: skip
    assert title.algorithm == "A tiled GEMM." and title.speed == ""
    assert expert_notes(_expert(tmp_path, "c", "Expert kernel for X/y: one elementwise pass.")).algorithm == "elementwise"
    long = expert_notes(_expert(tmp_path, "d", "Expert kernel for X/y: " + "word " * 60))
    assert len(long.algorithm) == 160 and long.algorithm.endswith("…")
    assert expert_notes(str(tmp_path / "missing.py")).algorithm == ""


def test_every_slow_expert_is_listed_with_the_reason_from_its_file(tmp_path):
    slow = _expert(tmp_path, "slow", "Expert kernel for X/slow: a loop.\n\nSpeed: one SM; eager uses all of them.")
    spec = types.SimpleNamespace(dtypes=("float32",))
    tasks = {"X/slow": types.SimpleNamespace(expert_path=slow, spec=spec),
             "X/bare": types.SimpleNamespace(expert_path=_expert(tmp_path, "bare", "Expert kernel for X/bare: a scan."),
                                             spec=spec),
             "X/fast": types.SimpleNamespace(expert_path=_expert(tmp_path, "fast", "Expert kernel for X/fast: a tile."),
                                             spec=spec)}  # fmt: skip
    report = {"device": "NVIDIA H200", "runs": [{"records": [
        {"task": "X/slow", "status": "ok", "speedup": 0.1, "reason": "", "shapes": []},
        {"task": "X/bare", "status": "ok", "speedup": 0.2, "reason": "", "shapes": []},
        {"task": "X/fast", "status": "ok", "speedup": 4.0, "reason": "", "shapes": []}]}]}  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps(report))
    table = build_table([load_results(str(tmp_path / "r.json"))], tasks)
    section = table.split("### Below 0.5x on H200: 2, slowest first (1 without a `Speed:` reason in the expert file)")[1]
    section = section.split("## Per task")[0]
    assert "| X/slow | 0.10x | one SM; eager uses all of them. |" in section
    assert "| X/bare | 0.20x | no `Speed:` paragraph in the expert file yet |" in section
    assert "X/fast" not in section
    assert "**H200**: geometric mean speedup over eager **0.43x** over 3 timed experts; 2 below 0.5x." in table


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read results"),
        ("{not json", "cannot read results"),
        ('[{"task": "Math/add"}]', "not the JSON of `python -m kbx.bench eval --json`"),
        ('{"device": "cpu", "method": "oneshot", "runs": [{"records": []}]}', "method 'oneshot' is not one of"),
    ],
)
def test_a_bad_results_file_is_one_line_error(tmp_path, capsys, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    assert bench_main(["table", str(path), "--out", str(tmp_path / "EXPERTS.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kbx: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "EXPERTS.md").exists()


def test_parts_of_one_run_are_merged_and_a_task_judged_twice_is_refused(tmp_path):
    report = json.loads(Path(EXPERTS_H100).read_text())
    records = report["runs"][0]["records"]
    for name, part in (("a.json", records[:3]), ("b.json", records[3:])):
        (tmp_path / name).write_text(json.dumps({**report, "runs": [{**report["runs"][0], "records": part}]}))
    merged = write_table([str(tmp_path / "a.json"), str(tmp_path / "b.json"), INDUCTOR_H100], "")
    whole = write_table([EXPERTS_H100, INDUCTOR_H100], "")
    assert merged.split("## Summary")[1] == whole.split("## Summary")[1]
    assert "`a.json` + `b.json` (reference on h100, 8 records)" in merged
    with pytest.raises(TableError, match="Activation/relu is in both .* \\(reference on h100\\): give it once"):
        write_table([EXPERTS_H100, EXPERTS_H100], "")


def test_no_results_or_none_of_the_experts_are_refused():
    with pytest.raises(TableError, match="no expert results"):
        write_table([INDUCTOR_H100], "")
    with pytest.raises(TableError, match="no results files"):
        write_table([], "")


def test_inductor_is_refused_on_a_cpu(capsys):
    assert bench_main(["eval", "--method", "inductor", "--task", "Math/add", "--runs", "1"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_cli_end_to_end_on_cpu_results_says_there_are_no_timings(tmp_path):
    """A real CPU bench run of one expert, then the table from it: statuses, and no speedups."""
    results, out = tmp_path / "cpu.json", tmp_path / "EXPERTS.md"
    run = [sys.executable, "-m", "kbx.bench"]
    subprocess.run([*run, "eval", "--runs", "1", "--workers", "1", "--task", "Activation/relu", "--json", str(results)],
                   check=True, capture_output=True, timeout=600)  # fmt: skip
    done = subprocess.run([*run, "table", str(results), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    table = out.read_text()
    assert "No timings: these results come from a CPU" in table
    assert _row(table, "Activation/relu")[1:] == ["ok", "elementwise"]
    assert "x eager" not in table
