"""KernelAgent (meta-pytorch/KernelAgent): a test, seeded parallel workers, verify-refine rounds.

Round 0: optionally one call writes a test (as upstream does; kbx never runs it: every kernel is
judged by kbx's own cases, and the test is only context in the refinement prompts), then one seed
kernel per worker at temperature `seed_temperature + temperature_step * i`. Round k: every worker
whose kernel failed refines it from the evaluator's verdict, a scan for banned high-level PyTorch
calls, and its last `history_size` rounds (code cut to 500 characters, errors to 2,000). With
`first_pass_wins` (upstream) all workers stop once any kernel is correct; otherwise each worker
stops on its own first pass and the fastest correct kernel of all workers ships.
"""

from __future__ import annotations

import concurrent.futures
import re

from kbx.core.record import EvalRecord
from kbx.methods.base import Proposal
from kbx.methods.llm import LLMMethod, common_args
from kbx.tasks.spec import TaskInfo

HISTORY_CODE_CHARS = 500
HISTORY_ERROR_CHARS = 2000
BANNED = {  # high-level PyTorch that does the work instead of a Triton kernel
    "torch.nn module": r"\btorch\.nn\.(?!functional)[A-Z]\w*\(",
    "torch.nn.functional": r"\b(?:torch\.nn\.functional|F)\.\w+\(",
    "nn.Module subclass": r"class\s+\w+\(\s*(?:torch\.)?nn\.Module\s*\)",
    ".forward() call": r"\.forward\(",
    "torch.ops.aten": r"\btorch\.ops\.aten\b",
    "einsum": r"\beinsum\(",
    "torch.matmul/mm/bmm": r"\btorch\.(?:matmul|mm|bmm)\(",
}
GUIDELINES = ("Rules: the Python wrapper may only check arguments, allocate outputs and launch Triton kernels; "
              "all arithmetic happens in @triton.jit kernels. Fuse the work into as few kernels as possible.")  # fmt: skip


class KernelAgent(LLMMethod):
    name = "kernelagent"

    def __init__(self, *args, workers: int, history_size: int, test_call: bool, first_pass_wins: bool,
                 seed_temperature: float, temperature_step: float, public_seeds: tuple[int, ...],
                 feedback: str) -> None:  # fmt: skip
        super().__init__(*args)
        self.level = feedback
        self.workers, self.history_size, self.test_call = workers, history_size, test_call
        self.first_pass_wins = first_pass_wins
        self.seed_temperature, self.temperature_step = seed_temperature, temperature_step
        self.public_seeds = public_seeds
        self.tests: dict[str, str] = {}  # task id -> the LLM-written test (context only)

    def temperature(self, worker: int) -> float:
        return self.seed_temperature + self.temperature_step * worker

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        judged = self.judged(task.id, history)
        if round_index == 0:
            if self.test_call:
                self.write_test(task)
            active = list(range(self.workers))
        else:
            passed = {label for label, _, r in judged if r.correct}
            if passed and self.first_pass_wins:
                return []
            active = [w for w in range(self.workers) if f"worker{w}" not in passed]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(active))) as pool:
            calls = list(pool.map(lambda w: self.step(task, round_index, w, judged), active))
        return self.proposals(task, [(f"worker{w}", c) for w, c in zip(active, calls, strict=True)])

    def write_test(self, task: TaskInfo) -> None:
        call = self.ask(task, 0, self.conversation(
            task, "Before any kernel: write a pytest test for it. Build random non-zero inputs, compute the "
            "expected result with PyTorch, call the kernel and compare numerically. Never pass expected "
            "outputs to the kernel. One fenced python block."), role="test_writer")  # fmt: skip
        if call is not None and not call.error:
            from kbx.core.source import extract_code

            self.tests[task.id] = extract_code(call.text)

    def step(self, task: TaskInfo, k: int, worker: int, judged: list):
        mine = [(code, r) for label, code, r in judged if label == f"worker{worker}"]
        if k == 0 or not mine:
            return self.ask(task, k, self.conversation(task, GUIDELINES), sample=worker,
                            temperature=self.temperature(worker))  # fmt: skip
        return self.ask(task, k, self.refine_prompt(task, mine), role="refiner", sample=worker,
                        temperature=self.temperature(worker))  # fmt: skip

    def refine_prompt(self, task: TaskInfo, mine: list) -> list[dict]:
        code, record = mine[-1]
        parts = [GUIDELINES]
        if task.id in self.tests:
            parts.append(f"A test written for this kernel:\n```python\n{self.tests[task.id]}```")
        for old_code, old in mine[-1 - self.history_size : -1]:
            parts.append(f"Earlier round ({old.status.value}; {old.reason[:HISTORY_ERROR_CHARS]}):\n"
                         f"```python\n{old_code[:HISTORY_CODE_CHARS]}\n```")  # fmt: skip
        parts += [f"Current kernel:\n```python\n{code}```", self.feedback(task, record, self.level)]
        hits = banned_calls(code)
        if hits:
            parts.append("Banned calls found (replace them with Triton kernels): " + ", ".join(hits) + ".")
        return self.conversation(task, *parts)


def banned_calls(code: str) -> list[str]:
    """Names of the banned patterns the code contains."""
    return [name for name, pattern in BANNED.items() if re.search(pattern, code)]


def build_kernelagent(llm=None, prompt=None, hardware=None, budget=None, public_seeds=(0,), workers: int = 3,
                      history_size: int = 8, test_call: bool = True, first_pass_wins: bool = True,
                      seed_temperature: float = 0.8, temperature_step: float = 0.1, feedback: str = "P",
                      name: str = "kernelagent") -> KernelAgent:  # fmt: skip
    return KernelAgent(*common_args(llm, prompt, hardware, budget), workers=workers, history_size=history_size,
                       test_call=bool(test_call), first_pass_wins=bool(first_pass_wins),
                       seed_temperature=float(seed_temperature), temperature_step=float(temperature_step),
                       public_seeds=tuple(public_seeds), feedback=feedback)  # fmt: skip
