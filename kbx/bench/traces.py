"""`python -m kbx.bench traces`: what writing each task's trace costs an LLM job, as a ratio of wall times.

Runs `python -m kbx.run method=iterative` over `--tasks` tasks that have expert kernels, against
kbx's scripted OpenAI-compatible server (kbx.llm.scripted: each completion is the task's expert
kernel, so every attempt is judged in full), with kbx's LLM cache off, `--repeats` times with
`tracking.traces=true` and as often with `false`, alternating, in reversed order every other time
so a shared machine's drift hits both alike. Each job writes to a store of its own that exists
already (a later run's case). The figure is the ratio of the median wall times, on over off, and
the goal is GOAL_RATIO (the goal of kbx.run over the bare evaluator, kbx.bench.overhead).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

from kbx.bench.overhead import GOAL_RATIO, _create_store, _timed

_TASK = re.compile(r"^Task (\S+/\S+)\.$", re.MULTILINE)
MODES = (True, False)  # tracking.traces


def bench_traces(out: Path, n_tasks: int, rounds: int, workers: int, repeats: int) -> dict:
    """Time the job `repeats` times per mode; figures and each run's log under `out`."""
    from kbx.llm.scripted import ScriptedServer
    from kbx.tasks import discover

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    tasks = [t for t in sorted(discover().values(), key=lambda t: t.id) if t.expert_path][:n_tasks]
    experts = {t.id: Path(t.expert_path).read_text() for t in tasks}
    key = out / "api-key.txt"
    key.write_text("sk-bench\n")
    wall: dict[bool, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[bool, list[float]] = {mode: [] for mode in MODES}
    with ScriptedServer(lambda messages, n: _answer(messages, experts)) as srv:
        for k in range(repeats):
            for mode in MODES if k % 2 == 0 else tuple(reversed(MODES)):
                name = f"traces-{'on' if mode else 'off'}-{k}"
                store = out / name / "mlflow.db"
                _create_store(store)
                argv = [sys.executable, "-m", "kbx.run", "method=iterative", f"task=[{','.join(experts)}]",
                        "hardware=cpu", f"iteration.rounds={rounds}", f"eval.workers={workers}", "llm.model=openai/bench",
                        f"llm.api_base={srv.base}", f"llm.api_key_file={key}", "llm.cache=off",
                        f"tracking.traces={str(mode).lower()}", f"tracking_uri=sqlite:///{store}",
                        f"hydra.run.dir={out / 'hydra' / name}"]  # fmt: skip
                seconds, cpu_s = _timed(argv, out / f"{name}.log")
                wall[mode].append(seconds)
                cpu[mode].append(cpu_s)
                print(f"{name:14s} {seconds:7.1f} s wall, {cpu_s:7.1f} s CPU", flush=True)
    on, off = statistics.median(wall[True]), statistics.median(wall[False])
    return {"tasks": list(experts), "rounds": rounds, "workers": workers, "repeats": repeats,
            "wall_s": {"on": wall[True], "off": wall[False]}, "cpu_s": {"on": cpu[True], "off": cpu[False]},
            "median_on_s": on, "median_off_s": off, "ratio": on / off, "goal_ratio": GOAL_RATIO}  # fmt: skip


def _answer(messages: list[dict], experts: dict[str, str]) -> str:
    if "Reply with the word ok" in messages[-1]["content"]:
        return "ok"
    found = _TASK.search("\n".join(m["content"] for m in messages))
    return f"```python\n{experts[found.group(1)]}```" if found else "no task"


def format_traces_report(r: dict) -> str:
    verdict = "meets" if r["ratio"] <= r["goal_ratio"] else "misses"
    return (f"method=iterative, {len(r['tasks'])} tasks x {r['rounds']} rounds, {r['workers']} workers, hardware=cpu, "
            f"scripted server; medians of {r['repeats']} runs each\n"
            f"tracking.traces=true  {r['median_on_s']:7.1f} s wall (runs: {', '.join(f'{s:.1f}' for s in r['wall_s']['on'])})\n"
            f"tracking.traces=false {r['median_off_s']:7.1f} s wall (runs: {', '.join(f'{s:.1f}' for s in r['wall_s']['off'])})\n"
            f"on / off = {r['ratio']:.3f} ({verdict} the goal of {r['goal_ratio']})")  # fmt: skip
