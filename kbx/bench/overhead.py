"""`python -m kbx.bench overhead`: what `kbx.run` costs over the bare evaluator, on the same tasks.

Runs these commands as separate processes, in turn, over the same expert kernels with the same
workers, and times each from start to exit:
- eval: `python -m kbx.bench eval --runs 1` (the evaluator alone: no Hydra, no MLflow);
- run: `python -m kbx.run method=reference` (Hydra, preflight, MLflow's job run and a task run
  per task with their params, metrics and artifacts, the summary), with a new tracking store, as
  on a machine's first run (MLflow creates its tables);
- run_existing: the same with a store that already exists (a later run: it looks for a run to resume);
- run_default (only when asked for): `run` without `eval.workers`, as the README's command is typed:
  the hardware profile's default workers, next to the tuned setting.
The goal is a ratio run / eval of at most `GOAL_RATIO`. `--repeats N` runs them N times (`--commands`
picks some), in reversed order every other time, so drift of a shared machine hits each alike; the
figures are medians. Each command's CPU seconds (its processes' user + system time) are reported too:
on a loaded machine they move less than wall time. Logs and `overhead.json` go to `--out`.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_RATIO = 1.05
COMMANDS = ("eval", "run", "run_existing", "run_default")
DEFAULT_COMMANDS = ("eval", "run", "run_existing")
LABELS = {"run": "kbx.run, new store", "run_existing": "kbx.run, existing store",
          "run_default": "kbx.run, default workers"}  # fmt: skip


def bench_overhead(out: Path, category: str, workers: int, hardware: str, repeats: int,
                   commands: tuple[str, ...] = DEFAULT_COMMANDS, task_ids: tuple[str, ...] = (),
                   gpus: int = 1) -> dict:  # fmt: skip
    """Time `commands` `repeats` times each. Figures already in `out` for the same category, workers
    and hardware are kept and added to, so a benchmark longer than one sitting (the whole suite) can
    be taken in parts: `--commands eval`, then `--commands run`."""
    from kbx.tasks import discover, select

    out = out.resolve()  # the children's Hydra run dir and store paths
    out.mkdir(parents=True, exist_ok=True)
    in_category = select(discover(), list(task_ids), category)
    experts = [t.id for t in in_category if t.expert_path]
    existing = out / "existing-store" / "mlflow.db"
    if "run_existing" in commands:
        _create_store(existing)
    report = {"category": category, "workers": workers, "hardware": hardware, "gpus": gpus,
              "n_tasks": len(experts), "tasks": experts, "goal_ratio": GOAL_RATIO,
              "wall_s": {name: [] for name in COMMANDS}, "cpu_s": {name: [] for name in COMMANDS}}  # fmt: skip
    report = _earlier(out / "overhead.json", report)
    for k in range(repeats):
        order = commands if k % 2 == 0 else tuple(reversed(commands))
        for name in order:
            n = len(report["wall_s"][name])  # this command's run number, over every sitting
            store = existing if name == "run_existing" else out / f"new-store-{n}" / "mlflow.db"
            subset = bool(task_ids) or len(experts) < len(in_category)
            argv = _argv(name, category, workers, hardware, experts, subset, store, out, n)
            argv += _gpus(name, gpus) if hardware != "cpu" else []
            wall_s, cpu_s = _timed(argv, out / f"{name}-{n}.log")
            report["wall_s"][name].append(wall_s)
            report["cpu_s"][name].append(cpu_s)
            print(f"{name:13s} #{n} {wall_s:7.1f} s wall, {cpu_s:7.1f} s CPU", flush=True)
            (out / "overhead.json").write_text(json.dumps(_summarized(report), indent=1))
    return _summarized(report)


def _earlier(path: Path, fresh: dict) -> dict:
    """The figures of an earlier sitting in the same directory, if it measured the same thing."""
    if not path.is_file():
        return fresh
    earlier = json.loads(path.read_text())
    same = all(earlier.get(k) == fresh[k] for k in ("category", "workers", "hardware", "gpus", "tasks"))
    if not same:
        raise ValueError(f"{path} holds figures of another benchmark (category, workers, hardware or tasks); "
                         "use another --out")  # fmt: skip
    return {**fresh, **{key: {**fresh[key], **earlier[key]} for key in ("wall_s", "cpu_s")}}


def _argv(name: str, category: str, workers: int, hardware: str, experts: list[str], subset: bool, store: Path,
          out: Path, k: int) -> list[str]:  # fmt: skip
    """The command line of one timed process; both are given the tasks by id where some were picked
    (`--task`) or the category also holds tasks without an expert kernel (which kbx.bench eval leaves out)."""
    if name == "eval":
        tasks = [a for t in experts for a in ("--task", t)] if subset else []
        return [sys.executable, "-m", "kbx.bench", "eval", "--runs", "1", "--workers", str(workers),
                "--category", category, *tasks]  # fmt: skip
    tasks = [f"task=[{','.join(experts)}]"] if subset else []
    workers_override = [] if name == "run_default" else [f"eval.workers={workers}"]
    store.parent.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-m", "kbx.run", "method=reference", f"category={category}", f"hardware={hardware}",
            *workers_override, *tasks, f"tracking_uri=sqlite:///{store}",
            f"hydra.run.dir={out / 'hydra' / f'{name}-{k}'}"]  # fmt: skip


def _gpus(name: str, gpus: int) -> list[str]:
    """Both on the first `gpus` GPUs of this host (`workers` attempts each). kbx.run is always told
    which: by default it takes every GPU of the model (hardware.gpus=all), kbx.bench eval one."""
    if name == "eval":
        return ["--gpus", str(gpus)] if gpus > 1 else []
    return [f"hardware.gpus=[{','.join(map(str, range(gpus)))}]"]


def _timed(argv: list[str], log: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and the descendants it waited for)."""
    before = _children_cpu_s()
    started = time.perf_counter()
    with open(log, "w") as f:
        f.write(" ".join(argv) + "\n")
        f.flush()
        code = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT).returncode
    wall_s = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"{argv[2]} exited with status {code}; see {log}")
    return wall_s, _children_cpu_s() - before


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _create_store(db: Path) -> None:
    """A tracking store that exists before any timed run (its tables created, no runs)."""
    from mlflow.tracking import MlflowClient

    db.parent.mkdir(parents=True, exist_ok=True)
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()


def _summarized(report: dict) -> dict:
    medians = {name: statistics.median(v) for name, v in report["wall_s"].items() if v}
    cpu = {name: statistics.median(v) for name, v in report["cpu_s"].items() if v}
    ratios = {name: medians[name] / medians["eval"] for name in LABELS if name in medians and "eval" in medians}
    return {**report, "median_s": medians, "median_cpu_s": cpu, "ratio": ratios}


def format_overhead_report(report: dict) -> str:
    m, c, r = report["median_s"], report["median_cpu_s"], report["ratio"]
    runs = ", ".join(f"{name} x{len(v)}" for name, v in report["wall_s"].items() if v)
    lines = [f"{report['n_tasks']} tasks ({report['category']}), {report['workers']} workers x "
             f"{report['gpus']} GPU(s), hardware={report['hardware']}; medians of {runs}"]  # fmt: skip
    if "eval" in m:
        lines.append(f"{'eval (bare evaluator)':27s} {m['eval']:7.1f} s wall {c['eval']:7.1f} s CPU")
    for name, what in LABELS.items():
        if name in r:
            verdict = "meets" if r[name] <= report["goal_ratio"] else "misses"
            lines.append(f"{what:27s} {m[name]:7.1f} s wall {c[name]:7.1f} s CPU   {r[name]:.3f}x wall "
                         f"({verdict} the goal of {report['goal_ratio']}x)")  # fmt: skip
    return "\n".join(lines)
