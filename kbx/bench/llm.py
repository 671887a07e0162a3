"""`python -m kbx.bench llm`: does generation overlap evaluation? Wall time against the ideal.

Runs method=iterative over `--tasks` tasks that have expert kernels, against kbx's scripted
OpenAI-compatible server (kbx.llm.scripted) with a fixed think time per completion, through
litellm over real HTTP and the real evaluator (kbx.run's evaluation settings). The server answers each task with its expert
kernel, so every attempt is judged in full. Ideal wall time with perfect overlap is the largest of
(LLM seconds / llm.concurrency), (evaluation seconds / evaluator workers) and the longest task's
own chain (its rounds run in sequence, each a completion then a verdict); a serial loop would
take LLM seconds + evaluation seconds.

`--rate-limited F` answers a share F of completions HTTP 429 once (with `Retry-After: R` when
`--retry-after R` is above 0, else without the header), `--server-errors F` a share 500 once; the
retry of such a call is answered normally. Which calls are refused follows from a hash of the
prompt, so a rerun refuses the same ones.
"""

from __future__ import annotations

import hashlib
import math
import re
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

_TASK = re.compile(r"^Task (\S+/\S+)\.$", re.MULTILINE)


def scripted_tasks(n_tasks: int, task_ids: tuple[str, ...] = ()) -> dict[str, str]:
    """Task id -> expert kernel: the first `n_tasks` tasks (by id, or of `task_ids`) that the scripted
    model can answer with their expert kernel. One whose expert imports kbx.experts would be judged
    borrowed_answer, as any model's code that does (kbx.sandbox.answers), so those are left out."""
    from kbx.tasks import discover

    found = {t.id: Path(t.expert_path).read_text() for t in sorted(discover().values(), key=lambda t: t.id)
             if t.expert_path and (not task_ids or t.id in task_ids)}  # fmt: skip
    return dict(list({i: code for i, code in found.items() if "kbx.experts" not in code}.items())[:n_tasks])


def expert_answer(messages: list[dict], experts: dict[str, str]) -> str:
    """The scripted model: the expert kernel of the task the prompt names (the preflight gets its "ok")."""
    if "Reply with the word ok" in messages[-1]["content"]:
        return "ok"
    found = _TASK.search("\n".join(m["content"] for m in messages))
    return f"```python\n{experts[found.group(1)]}```" if found else "no task"


def bench_llm(n_tasks: int, latency_s: float, concurrency: int, workers: int, rounds: int,
              rate_limited: float = 0.0, retry_after_s: float = 0.0, server_errors: float = 0.0,
              api_base: str = "", task_ids: tuple[str, ...] = ()) -> dict:  # fmt: skip
    """`api_base` set: the model is that server's (no scripted server is started; `latency_s` and the
    refusals do not apply), as `kbx.bench traces` runs its bare job against its own scripted server.
    `task_ids` picks the tasks (at most `n_tasks` of them)."""
    import torch

    from kbx.core.hardware import load_profiles
    from kbx.driver.evaluator import EvalSettings, Evaluator
    from kbx.llm import LLMClient, LLMSettings
    from kbx.llm.prompt import PromptSettings
    from kbx.llm.scripted import Failure, ScriptedServer
    from kbx.methods.llm import Budget, build_iterative
    from kbx.methods.loop import proposers, run_suite
    from kbx.tasks import discover

    experts = scripted_tasks(n_tasks, task_ids)
    tasks = [discover()[i] for i in experts]

    refused: dict[str, int] = {}  # prompt hash -> HTTP status it was refused with once
    headers = {"Retry-After": f"{retry_after_s:g}"} if retry_after_s > 0 else {}

    def answer(messages: list[dict], n: int) -> str | Failure:
        if "Reply with the word ok" in messages[-1]["content"]:
            return "ok"
        key = hashlib.sha256(repr(messages).encode()).hexdigest()
        share = int(key[:8], 16) / 16**8
        if key not in refused and share < rate_limited + server_errors:
            refused[key] = 429 if share < rate_limited else 500
            return Failure(refused[key], headers if refused[key] == 429 else {})
        return expert_answer(messages, experts)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    server = nullcontext(None) if api_base else ScriptedServer(answer, latency_s=latency_s)
    with server as srv, tempfile.TemporaryDirectory() as cache:
        llm = LLMClient(LLMSettings(model="openai/bench", api_base=api_base or srv.base, api_key="sk-bench", cache="off",
                                    cache_dir=cache, concurrency=concurrency, retries=2, backoff_s=0.0))  # fmt: skip
        llm.preflight()  # imports litellm and opens the connection before the clock starts, as a job does
        method = build_iterative(llm=llm, prompt=PromptSettings(), hardware=load_profiles()["cpu"], budget=Budget())
        with Evaluator(EvalSettings(device=device, workers=workers)) as ev:  # kbx.run's defaults: a secret seed too
            started = time.perf_counter()
            results = run_suite(method, tasks, ev, rounds, parallel=proposers(workers, concurrency), judging=workers)
            wall = time.perf_counter() - started
    calls = [c.call for r in results for c in r.calls]
    llm_s = math.fsum(c.latency_s for c in calls)
    eval_s = math.fsum(j.record.wall_s for r in results for j in r.judged)
    chain = max(math.fsum(c.call.latency_s for c in r.calls) + math.fsum(j.record.wall_s for j in r.judged)
                for r in results)  # fmt: skip
    ideal = max(llm_s / concurrency, eval_s / workers, chain)
    statuses = list(refused.values())
    return {"device": device, "tasks": len(tasks), "rounds": rounds, "calls": len(calls), "attempts":
            sum(len(r.judged) for r in results), "latency_s": latency_s, "concurrency": concurrency,
            "workers": workers, "wall_s": wall, "llm_s": llm_s, "eval_s": eval_s, "longest_chain_s": chain,
            "ideal_s": ideal, "serial_s": llm_s + eval_s, "wall_over_ideal": wall / ideal if ideal else math.nan,
            "answered_429": statuses.count(429), "answered_500": statuses.count(500), "retry_after_s": retry_after_s,
            "llm_errors": sum(bool(c.error) for c in calls), "lowest_llm_limit": llm.slots.lowest,
            "peak_in_flight": llm.slots.peak}  # fmt: skip


def format_llm_report(r: dict) -> str:
    return (f"device {r['device']}: {r['tasks']} tasks x {r['rounds']} rounds = {r['attempts']} attempts, "
            f"{r['calls']} completions at {r['latency_s']:g} s, llm.concurrency {r['concurrency']}, "
            f"{r['workers']} evaluator workers\n"
            f"wall {r['wall_s']:.1f} s; ideal {r['ideal_s']:.1f} s (LLM {r['llm_s']:.1f} s / {r['concurrency']}, "
            f"evaluation {r['eval_s']:.1f} s / {r['workers']}, longest task chain {r['longest_chain_s']:.1f} s); "
            f"serial {r['serial_s']:.1f} s\n"
            f"refused once: {r['answered_429']} with 429 (Retry-After {r['retry_after_s']:g} s; 0: none), "
            f"{r['answered_500']} with 500; calls failed for good: {r['llm_errors']}; "
            f"calls in flight at most {r['peak_in_flight']}, limit lowest {r['lowest_llm_limit']}\n"
            f"wall / ideal = {r['wall_over_ideal']:.2f}")  # fmt: skip
