"""LLM-backed methods: oneshot, best_of_n and iterative (KernelBench-style refinement).

They share one base: prompts from `kbx.llm.prompt`, completions through one `LLMClient`
(concurrency, retries, record/replay, the job's budget), a per-task call budget, and a per-task call log that
`kbx.tracking.tracker` turns into per-round metrics and artifacts. A provider error on a call yields no
proposal for that call (it is logged with its error) and the run goes on.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading

from kbx.core.hardware import Hardware
from kbx.core.record import EvalRecord
from kbx.core.source import code_is_cut, extract_code
from kbx.llm.client import BudgetReached, Call, LLMClient
from kbx.llm.prompt import PromptSettings, task_feedback, task_messages
from kbx.methods.base import MethodError, Proposal
from kbx.tasks.spec import TaskInfo

FEEDBACK_LEVELS = ("G", "E", "P")
HISTORY_MODES = ("last", "full")


@dataclasses.dataclass(frozen=True)
class Budget:
    """Per-task caps over all rounds; 0 means no cap. A call starts only while the task is under both."""

    max_calls: int = 0
    max_tokens: int = 0


@dataclasses.dataclass(frozen=True)
class LoggedCall:
    """A call of the task's, in its round; `proposal` is the label of the code made from its answer (the
    attempt `round<round>/<proposal>`), "" when none was (a reflection, a judge's score, a failed call)."""

    round: int
    call: Call
    proposal: str = ""


@dataclasses.dataclass
class _TaskState:
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    started: int = 0  # calls started (reserved against max_calls)
    tokens: int = 0
    calls: list[LoggedCall] = dataclasses.field(default_factory=list)
    proposed: list[str] = dataclasses.field(default_factory=list)  # code, in the order judged


class LLMMethod:
    """Shared machinery; subclasses implement `propose`."""

    name = "llm"
    public_seeds: tuple[int, ...] = (0,)  # the seeds whose mismatching values feedback may show

    def __init__(self, llm: LLMClient, prompt: PromptSettings, hardware: Hardware, budget: Budget) -> None:
        self.llm, self.prompt, self.hardware, self.budget = llm, prompt, hardware, budget
        self._states: dict[str, _TaskState] = {}
        self._states_lock = threading.Lock()

    def state(self, task_id: str) -> _TaskState:
        with self._states_lock:
            return self._states.setdefault(task_id, _TaskState())

    def calls_for(self, task_id: str) -> list[LoggedCall]:
        return list(self.state(task_id).calls)

    def ask(self, task: TaskInfo, round_index: int, messages: list[dict], *, role: str = "generator",
            sample: int = 0, temperature: float | None = None) -> Call | None:  # fmt: skip
        """One completion within the task's budget and the job's; None when either is spent."""
        st = self.state(task.id)
        with st.lock:
            b = self.budget
            if (b.max_calls and st.started >= b.max_calls) or (b.max_tokens and st.tokens >= b.max_tokens):
                return None
            st.started += 1
        try:
            call = self.llm.complete(messages, role=role, sample=sample, temperature=temperature)
        except BudgetReached:
            with st.lock:
                st.started -= 1
            return None
        with st.lock:
            st.tokens += call.tokens
            st.calls.append(LoggedCall(round_index, call))
        return call

    def judged(self, task_id: str, history: list[EvalRecord]) -> list[tuple[str, str, EvalRecord]]:
        """(candidate label, code, record) for every judged proposal, in order. Labels are the
        method's own (`Proposal.label`), recovered from the record's "round<k>/<label>"."""
        codes = self.state(task_id).proposed
        return [(r.label.split("/", 1)[-1], code, r) for code, r in zip(codes, history, strict=False)]

    def feedback(self, task: TaskInfo, record: EvalRecord, level: str) -> str:
        """The evaluator's verdict on a kernel of `task` at a KernelBench level (G, E, P: kbx.llm.prompt)."""
        return task_feedback(task, record, level, self.prompt, self.hardware, self.public_seeds)

    def conversation(self, task: TaskInfo, *parts: str) -> list[dict]:
        """The one-shot prompt with more sections appended to its user message."""
        messages = task_messages(task, self.prompt, self.hardware)
        messages[-1] = {"role": "user", "content": "\n\n".join([messages[-1]["content"], *parts])}
        return messages

    def proposals(self, task: TaskInfo, calls: list[tuple[str, Call | None]]) -> list[Proposal]:
        """Successful calls as proposals (remembering their code for feedback); failed calls drop out.
        An answer that stopped at its token limit inside its code is a proposal marked cut off."""
        st = self.state(task.id)
        made = {id(c): label for label, c in calls if c is not None and not c.error}
        out = [Proposal(extract_code(c.text), label, cut_off=cut_off(c)) for label, c in calls if id(c) in made]
        with st.lock:
            st.proposed += [p.code for p in out]
            st.calls = [dataclasses.replace(lc, proposal=made[id(lc.call)]) if id(lc.call) in made else lc
                        for lc in st.calls]  # fmt: skip
        return out


class OneShot(LLMMethod):
    name = "oneshot"
    max_rounds = 1  # kbx.methods.loop: a task is done after round 0, whatever iteration.rounds says

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        if round_index > 0:
            return []
        return self.proposals(task, [("oneshot", self.ask(task, 0, task_messages(task, self.prompt, self.hardware)))])


class BestOfN(LLMMethod):
    """N samples of the one-shot prompt at temperature T in round 0; the loop ships the fastest correct."""

    name = "best_of_n"
    max_rounds = 1

    def __init__(self, *args, n: int, temperature: float) -> None:
        super().__init__(*args)
        self.n, self.temperature = n, temperature

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        if round_index > 0:
            return []
        messages = task_messages(task, self.prompt, self.hardware)
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.n) as pool:
            calls = list(pool.map(lambda i: self.ask(task, 0, messages, sample=i, temperature=self.temperature),
                                  range(self.n)))  # fmt: skip
        return self.proposals(task, [(f"sample{i}", c) for i, c in enumerate(calls)])


class Iterative(LLMMethod):
    """Round 0: the one-shot prompt. Round k: the previous kernel(s) with the evaluator's feedback."""

    name = "iterative"

    def __init__(self, *args, feedback: str, history: str, stop_when_correct: bool,
                 public_seeds: tuple[int, ...]) -> None:  # fmt: skip
        super().__init__(*args)
        self.level, self.history_mode, self.stop_when_correct = feedback, history, stop_when_correct
        self.public_seeds = public_seeds

    def messages(self, task: TaskInfo, history: list[EvalRecord]) -> list[dict]:
        messages = task_messages(task, self.prompt, self.hardware)
        pairs = list(zip(self.state(task.id).proposed, history))  # one proposal per judged round, in order
        for code, record in pairs[-1:] if self.history_mode == "last" else pairs:
            messages.append({"role": "assistant", "content": f"```python\n{code}```"})
            messages.append({"role": "user", "content": self.feedback(task, record, self.level)})
        return messages

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        if self.stop_when_correct and history and history[-1].correct:
            return []
        call = self.ask(task, round_index, self.messages(task, history))
        return self.proposals(task, [("refine" if history else "oneshot", call)])


def cut_off(call: Call) -> str:
    """Why the call's code is incomplete, for a `truncated` record; "" when it is whole (an answer cut
    in the prose after a closed code block still has all its code)."""
    if not call.truncated or not code_is_cut(call.text):
        return ""
    return f"the LLM's answer was cut off inside its code {call.cut_note()}"


def common_args(llm, prompt, hardware, budget) -> tuple:
    if llm is None:
        raise MethodError("this method needs an LLM: set llm.model (and llm.api_base for a local server)")
    return (llm, prompt, hardware, budget)


def build_oneshot(llm=None, prompt=None, hardware=None, budget=None, name: str = "oneshot") -> OneShot:
    return OneShot(*common_args(llm, prompt, hardware, budget))


def build_best_of_n(llm=None, prompt=None, hardware=None, budget=None, n: int = 4, temperature: float = 0.8,
                    name: str = "best_of_n") -> BestOfN:  # fmt: skip
    return BestOfN(*common_args(llm, prompt, hardware, budget), n=n, temperature=float(temperature))


def build_iterative(llm=None, prompt=None, hardware=None, budget=None, public_seeds=(0,), feedback: str = "E",
                    history: str = "last", stop_when_correct: bool = False, name: str = "iterative") -> Iterative:  # fmt: skip
    return Iterative(*common_args(llm, prompt, hardware, budget), feedback=feedback, history=history,
                     stop_when_correct=bool(stop_when_correct), public_seeds=tuple(public_seeds))  # fmt: skip
