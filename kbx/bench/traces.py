"""`python -m kbx.bench traces`: what `kbx.run` with traces costs an LLM job, as ratios of wall times.

Runs the same iterative job over `--tasks` tasks that have expert kernels, against kbx's scripted
OpenAI-compatible server (kbx.llm.scripted: each completion is the task's expert kernel, so every
attempt is judged in full), with kbx's LLM cache off, three ways:
- bare: `python -m kbx.bench llm --api-base URL` (the method loop over the bare evaluator: no Hydra,
  no MLflow, no traces);
- on: `python -m kbx.run method=iterative ... tracking.traces=true`;
- off: the same with `tracking.traces=false`.
Each `--repeats` times, in turn, in reversed order every other time so a shared machine's drift hits
each alike; each kbx.run job writes to a store of its own that exists already (a later run's case).
The figures are ratios of median wall times: on / bare (P5, kbx.run over the bare evaluator, with
tracing on) and on / off (what tracing alone costs); the goal of both is GOAL_RATIO (kbx.bench.overhead).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from kbx.bench.overhead import GOAL_RATIO, _create_store, _timed

MODES = ("bare", "on", "off")
LLM_CONCURRENCY = 4  # llm.concurrency of conf/llm/default.yaml, which the kbx.run jobs keep


def bench_traces(out: Path, n_tasks: int, rounds: int, workers: int, repeats: int) -> dict:
    """Time the job `repeats` times per mode; figures and each run's log under `out`."""
    from kbx.bench.llm import expert_answer, scripted_tasks
    from kbx.llm.scripted import ScriptedServer

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    experts = scripted_tasks(n_tasks)
    key = out / "api-key.txt"
    key.write_text("sk-bench\n")
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    with ScriptedServer(lambda messages, n: expert_answer(messages, experts)) as srv:
        for k in range(repeats):
            for mode in MODES if k % 2 == 0 else tuple(reversed(MODES)):
                name = f"traces-{mode}-{k}"
                if mode != "bare":
                    _create_store(out / name / "mlflow.db")  # a later run's case: the store exists already
                argv = _argv(mode, list(experts), rounds, workers, srv.base, key, out / name)
                seconds, cpu_s = _timed(argv, out / f"{name}.log")
                wall[mode].append(seconds)
                cpu[mode].append(cpu_s)
                print(f"{name:16s} {seconds:7.1f} s wall, {cpu_s:7.1f} s CPU", flush=True)
    median = {mode: statistics.median(wall[mode]) for mode in MODES}
    return {"tasks": list(experts), "rounds": rounds, "workers": workers, "repeats": repeats,
            "llm_concurrency": LLM_CONCURRENCY, "wall_s": wall, "cpu_s": cpu, "median_s": median,
            "ratio_on_bare": median["on"] / median["bare"], "ratio_on_off": median["on"] / median["off"],
            "goal_ratio": GOAL_RATIO}  # fmt: skip


def _argv(mode: str, tasks: list[str], rounds: int, workers: int, base: str, key: Path, out: Path) -> list[str]:
    if mode == "bare":
        picked = [arg for task in tasks for arg in ("--task", task)]
        return [sys.executable, "-m", "kbx.bench", "llm", "--api-base", base, "--tasks", str(len(tasks)), *picked,
                "--rounds", str(rounds), "--workers", str(workers), "--concurrency", str(LLM_CONCURRENCY)]  # fmt: skip
    store = out / "mlflow.db"
    return [sys.executable, "-m", "kbx.run", "method=iterative", f"task=[{','.join(tasks)}]", "hardware=cpu",
            f"iteration.rounds={rounds}", f"eval.workers={workers}", f"llm.concurrency={LLM_CONCURRENCY}",
            "llm.model=openai/bench", f"llm.api_base={base}", f"llm.api_key_file={key}", "llm.cache=off",
            f"tracking.traces={'true' if mode == 'on' else 'false'}", f"tracking_uri=sqlite:///{store}",
            f"hydra.run.dir={out / 'hydra'}"]  # fmt: skip


def format_traces_report(r: dict) -> str:
    def line(mode: str, label: str) -> str:
        runs = ", ".join(f"{s:.1f}" for s in r["wall_s"][mode])
        return f"{label:34s} {r['median_s'][mode]:7.1f} s wall (runs: {runs})"

    def verdict(ratio: float) -> str:
        return f"{ratio:.3f} ({'meets' if ratio <= r['goal_ratio'] else 'misses'} the goal of {r['goal_ratio']})"

    return (f"method=iterative, {len(r['tasks'])} tasks x {r['rounds']} rounds, {r['workers']} workers, "
            f"llm.concurrency {r['llm_concurrency']}, hardware=cpu, scripted server; medians of {r['repeats']} runs each\n"
            f"{line('bare', 'bare evaluator (kbx.bench llm)')}\n"
            f"{line('on', 'kbx.run, tracking.traces=true')}\n"
            f"{line('off', 'kbx.run, tracking.traces=false')}\n"
            f"P5, kbx.run with traces / bare = {verdict(r['ratio_on_bare'])}\n"
            f"traces on / off = {verdict(r['ratio_on_off'])}")  # fmt: skip
