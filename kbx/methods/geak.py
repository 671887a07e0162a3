"""GEAK (arXiv 2507.23194), population version: generator, evaluator, reflector, optimiser.

Each task keeps `candidates` lineages. Round 0 samples one kernel per lineage. In round k each
lineage first reflects on its last kernel and the evaluator's verdict (reflector), then generates
(generator): in debug mode from its last attempt, the verdict and the reflection; in optimise mode
(its last kernel was correct, or `max_debug` debug rounds failed in a row) from the pool of correct
kernels so far, fastest first, with the fixed optimisation themes. An optional LLM judge scores each
new kernel on nine criteria; the scores order which past attempts a lineage's prompts show.

The pool is kept right: the `ancestors` fastest correct kernels, where a newcomer replaces the
slowest member if it beats it (upstream compares against the pool head only). The evaluator is
kbx's, the same one that scores the result, so GEAK's own tolerances and golden tables play no part.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import re

from kbx.core.record import EvalRecord
from kbx.methods.base import Proposal
from kbx.methods.llm import LLMMethod, common_args
from kbx.tasks.spec import TaskInfo

JUDGE_CRITERIA = ("fusion", "autotune coverage", "memory access", "algorithmic complexity", "occupancy",
                  "pipelining", "numerical stability", "portability", "optimisation scope")  # fmt: skip
OPTIMISATION_THEMES = ("coalesced, vectorised memory access", "occupancy (block size, warps, stages)",
                       "autotuning over block sizes", "fusing passes to cut memory traffic",
                       "fewer launches", "an algorithm with less work")  # fmt: skip
SHOWN_ATTEMPTS = 3  # past attempts of a lineage shown in a debug prompt (best judge scores first)


class Geak(LLMMethod):
    name = "geak"

    def __init__(self, *args, candidates: int, ancestors: int, judge: bool, mutation: bool, max_debug: int,
                 temperature: float, public_seeds: tuple[int, ...], feedback: str) -> None:  # fmt: skip
        super().__init__(*args)
        self.level = feedback
        self.candidates, self.ancestors, self.use_judge = candidates, ancestors, judge
        self.mutation, self.max_debug, self.temperature = mutation, max_debug, temperature
        self.public_seeds = public_seeds
        self.scores: dict[str, float] = {}  # code -> judge score (sum over criteria)

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        lineages = [f"cand{i}" for i in range(self.candidates)]
        judged = self.judged(task.id, history)
        pool = self.pool(judged)
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.candidates) as workers:
            calls = list(workers.map(lambda name: self.step(task, round_index, name, judged, pool), lineages))
        return self.proposals(task, [(name, call) for name, call in zip(lineages, calls, strict=True)])

    def step(self, task: TaskInfo, k: int, lineage: str, judged: list, pool: list):
        """One lineage's round: (reflect,) generate, (judge). Returns the generation call."""
        mine = [(code, r) for label, code, r in judged if label == lineage]
        sample = int(lineage.removeprefix("cand"))
        if k == 0 or not mine:
            call = self.ask(task, k, self.conversation(task), sample=sample, temperature=self.temperature)
        else:
            code, record = mine[-1]
            reflection = self.reflect(task, k, code, record, sample)
            if pool and (record.correct or _failed_streak(mine) >= self.max_debug):
                messages = self.optimise_prompt(task, pool)
            else:
                messages = self.debug_prompt(task, mine, reflection)
            call = self.ask(task, k, messages, sample=sample, temperature=self.temperature)
        if self.use_judge and call is not None and not call.error:
            self.judge(task, k, call.text, sample)
        return call

    def reflect(self, task: TaskInfo, k: int, code: str, record: EvalRecord, sample: int) -> str:
        call = self.ask(task, k, self.conversation(
            task, f"A candidate kernel:\n```python\n{code}```",
            self.feedback(task, record, self.level).rsplit("\n", 1)[0],
            "Reflect: in a few sentences, why did this kernel fail, or what limits its speed? No code."),
            role="reflector", sample=sample)  # fmt: skip
        return call.text.strip() if call is not None and not call.error else ""

    def debug_prompt(self, task: TaskInfo, mine: list, reflection: str) -> list[dict]:
        last_code, last = mine[-1]
        shown = sorted(mine[:-1], key=lambda cr: -self.scores.get(cr[0], 0.0))[:SHOWN_ATTEMPTS - 1]
        parts = [f"Earlier attempt ({r.status.value}):\n```python\n{c}```" for c, r in shown]
        parts += [f"Your last attempt:\n```python\n{last_code}```", self.feedback(task, last, self.level)]
        if reflection:
            parts.append(f"Reflection on it: {reflection}")
        return self.conversation(task, *parts)

    def optimise_prompt(self, task: TaskInfo, pool: list) -> list[dict]:
        parts = ["Correct kernels found so far, fastest first:"]
        for speedup, code, record in pool:
            speed = f"speedup {speedup:.3g}x, {record.runtime_ms:.4g} ms" if record.timed else "correct (not timed)"
            parts.append(f"{speed}:\n```python\n{code}```")
        parts.append("Optimisation themes to consider: " + "; ".join(OPTIMISATION_THEMES) + ".")
        ask = ("Propose a strategy that beats all of them" +
               (", completely different from every strategy above" if self.mutation else "") +
               ". State it in one line starting 'Strategy:', then give the complete module. Keep the entry name.")  # fmt: skip
        return self.conversation(task, *parts, ask)

    def judge(self, task: TaskInfo, k: int, text: str, sample: int) -> None:
        from kbx.core.source import extract_code

        code = extract_code(text)
        call = self.ask(task, k, self.conversation(
            task, f"A candidate kernel:\n```python\n{code}```",
            "Score it from 0 to 1 on each criterion: " + ", ".join(JUDGE_CRITERIA) +
            ". Answer with one JSON object mapping each criterion to its score."), role="judge", sample=sample)  # fmt: skip
        if call is not None and not call.error:
            self.scores[code] = judge_score(call.text)

    def pool(self, judged: list) -> list[tuple[float, str, EvalRecord]]:
        """The `ancestors` fastest correct kernels, fastest first (untimed ones rank as 1x)."""
        pool: list[tuple[float, str, EvalRecord]] = []
        for _, code, record in judged:
            if not record.correct:
                continue
            speedup = record.speedup if record.timed and not math.isnan(record.speedup) else 1.0
            if len(pool) < self.ancestors:
                pool.append((speedup, code, record))
            else:
                worst = min(range(len(pool)), key=lambda i: pool[i][0])
                if speedup > pool[worst][0]:
                    pool[worst] = (speedup, code, record)
        return sorted(pool, key=lambda e: -e[0])


def judge_score(text: str) -> float:
    """Sum of the criterion scores in the judge's JSON (each clamped to [0, 1]); 0 when unreadable."""
    found = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        scores = json.loads(found.group(0)) if found else {}
    except ValueError:
        return 0.0
    values = [v for v in scores.values() if isinstance(v, (int, float))] if isinstance(scores, dict) else []
    return float(sum(min(1.0, max(0.0, v)) for v in values))


def _failed_streak(mine: list) -> int:
    streak = 0
    for _, record in reversed(mine):
        if record.correct:
            break
        streak += 1
    return streak


def build_geak(llm=None, prompt=None, hardware=None, budget=None, public_seeds=(0,), candidates: int = 4,
               ancestors: int = 5, judge: bool = True, mutation: bool = False, max_debug: int = 5,
               temperature: float = 1.0, feedback: str = "P", name: str = "geak") -> Geak:  # fmt: skip
    return Geak(*common_args(llm, prompt, hardware, budget), candidates=candidates, ancestors=ancestors,
                judge=bool(judge), mutation=bool(mutation), max_debug=max_debug, temperature=float(temperature),
                public_seeds=tuple(public_seeds), feedback=feedback)  # fmt: skip
