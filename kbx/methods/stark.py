"""STARK (arXiv 2510.16996): plan, code and debug agents over a search tree, one attempt a round.

The root stands for the PyTorch reference. Each round selects a node by an adapted epsilon-greedy
rule: with probability 1 - epsilon the best node (fastest correct; while none is correct, the most
recent failed node, to debug it; else the root), otherwise a random open node, leaves weighted
twice. The root closes after `n_root` children (root throttling), any node after `n_child_max`,
and a node whose children all failed (at least two) is a dead branch and is never selected.

A failed node goes to the debug agent (failing code, verdict, its plan, and its siblings, correct
ones first as fix patterns). A correct node, or the root, goes to the plan agent, which proposes
one transformation and marks the span to edit with anchors, then the code agent writes the whole
module. Every new kernel becomes a child; the leaderboard (top `leaderboard` correct nodes by
runtime) is shown to the plan agent. `iteration.rounds` is the number of attempts B.
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib

from kbx.core.record import EvalRecord
from kbx.methods.base import Proposal
from kbx.methods.llm import LLMMethod, common_args
from kbx.tasks.spec import TaskInfo

ANCHORS = ("# EDIT BEGIN", "# EDIT END")
DEAD_BRANCH_MIN_CHILDREN = 2
LEAF_WEIGHT = 2.0  # exploration prefers leaves


@dataclasses.dataclass
class Node:
    id: int
    parent: int  # -1 for the root
    code: str = ""
    plan: str = ""
    record: EvalRecord | None = None
    children: list[int] = dataclasses.field(default_factory=list)

    @property
    def correct(self) -> bool:
        return self.record is not None and self.record.correct

    def runtime(self) -> float:
        r = self.record
        return r.runtime_ms if r is not None and r.timed and not math.isnan(r.runtime_ms) else math.inf


@dataclasses.dataclass
class Tree:
    nodes: list[Node]
    rng: random.Random


class Stark(LLMMethod):
    name = "stark"

    def __init__(self, *args, epsilon: float, n_root: int, n_child_max: int, leaderboard: int,
                 plan_temperature: float, code_temperature: float, seed: int, public_seeds: tuple[int, ...],
                 feedback: str) -> None:  # fmt: skip
        super().__init__(*args)
        self.level = feedback
        self.epsilon, self.n_root, self.n_child_max, self.leaderboard_size = epsilon, n_root, n_child_max, leaderboard
        self.plan_temperature, self.code_temperature = plan_temperature, code_temperature
        self.seed, self.public_seeds = seed, public_seeds
        self.trees: dict[str, Tree] = {}

    def tree(self, task: TaskInfo) -> Tree:
        if task.id not in self.trees:  # a per-task RNG: the search does not depend on task scheduling
            rng = random.Random(zlib.crc32(task.id.encode()) ^ self.seed)
            self.trees[task.id] = Tree([Node(0, -1)], rng)
        return self.trees[task.id]

    def propose(self, task: TaskInfo, round_index: int, history: list[EvalRecord]) -> list[Proposal]:
        tree = self.tree(task)
        for label, _, record in self.judged(task.id, history):  # attach verdicts to their nodes
            tree.nodes[int(label.removeprefix("node"))].record = record
        node = self.select(tree)
        if node is None:
            return []  # every branch is closed or dead
        child = Node(len(tree.nodes), node.id)
        if node.id != 0 and not node.correct:
            call = self.debug(task, round_index, tree, node)
        else:
            child.plan, call = self.plan_and_code(task, round_index, tree, node)
        proposals = self.proposals(task, [(f"node{child.id}", call)])
        if proposals:
            child.code = proposals[0].code
            tree.nodes.append(child)
            node.children.append(child.id)
        return proposals

    # -- selection --------------------------------------------------------------------------

    def leaders(self, tree: Tree) -> list[Node]:
        correct = [n for n in tree.nodes if n.correct]
        return sorted(correct, key=lambda n: (n.runtime(), n.id))[: self.leaderboard_size]

    def is_open(self, tree: Tree, node: Node) -> bool:
        if node.id == 0:
            return len(node.children) < self.n_root
        if len(node.children) >= self.n_child_max:
            return False
        kids = [tree.nodes[c] for c in node.children]
        dead = len(kids) >= DEAD_BRANCH_MIN_CHILDREN and all(k.record is not None and not k.correct for k in kids)
        return not dead

    def select(self, tree: Tree) -> Node | None:
        candidates = [n for n in tree.nodes if self.is_open(tree, n)]
        if not candidates:
            return None
        if tree.rng.random() >= self.epsilon:
            leaders = [n for n in self.leaders(tree) if self.is_open(tree, n)]
            if leaders:
                return leaders[0]
            failed = [n for n in candidates if n.id != 0 and n.record is not None]
            if failed:
                return failed[-1]
            return candidates[0] if candidates[0].id == 0 else candidates[-1]
        weights = [LEAF_WEIGHT if not n.children else 1.0 for n in candidates]
        return tree.rng.choices(candidates, weights=weights)[0]

    # -- agents -----------------------------------------------------------------------------

    def debug(self, task: TaskInfo, k: int, tree: Tree, node: Node):
        siblings = [tree.nodes[c] for c in tree.nodes[node.parent].children if c != node.id]
        siblings.sort(key=lambda n: not n.correct)
        parts = [f"This kernel was written to carry out the plan: {node.plan or 'a first implementation'}",
                 f"```python\n{node.code}```", self.feedback(task, node.record, self.level)]  # fmt: skip
        for sib in siblings[:2]:
            verdict = "correct" if sib.correct else (sib.record.status.value if sib.record else "not judged")
            parts.append(f"A sibling attempt ({verdict}):\n```python\n{sib.code}```")
        parts.append("Debug the kernel: fix what the verdict reports and keep the plan. Give the complete module.")
        return self.ask(task, k, self.conversation(task, *parts), role="debugger", temperature=self.code_temperature)

    def plan_and_code(self, task: TaskInfo, k: int, tree: Tree, node: Node) -> tuple[str, object]:
        parts = []
        if node.id != 0:
            parts += [f"Current kernel ({_speed(node)}):\n```python\n{node.code}```"]
        for c in node.children:
            kid = tree.nodes[c]
            parts.append(f"Already tried from here: {kid.plan or 'a fix'} -> {_speed(kid)}")
        leaders = self.leaders(tree)
        if leaders:
            parts.append("Leaderboard: " + "; ".join(f"node {n.id}: {_speed(n)}" for n in leaders))
        start = "the PyTorch reference" if node.id == 0 else "the current kernel"
        parts.append(f"Plan ONE transformation of {start} that should make it faster (or, from the reference, "
                     f"a first Triton design). Answer with one line starting 'Plan:' and then the kernel with the "
                     f"span to change between the lines '{ANCHORS[0]}' and '{ANCHORS[1]}'.")  # fmt: skip
        plan_call = self.ask(task, k, self.conversation(task, *parts), role="planner", temperature=self.plan_temperature)
        if plan_call is None or plan_call.error:
            return "", plan_call
        plan = _plan_line(plan_call.text)
        code_parts = [f"Plan: {plan}", f"Anchored draft from the planner:\n{plan_call.text}"]
        if node.id != 0:
            code_parts.insert(0, f"Kernel to edit:\n```python\n{node.code}```")
        code_parts.append("Carry out the plan on the anchored span and give the complete, runnable module "
                          "(without the anchor lines).")  # fmt: skip
        call = self.ask(task, k, self.conversation(task, *code_parts), role="coder", temperature=self.code_temperature)
        return plan, call


def _plan_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip().lower().startswith("plan:"):
            return line.strip()[5:].strip()
    return text.strip().splitlines()[0][:200] if text.strip() else ""


def _speed(node: Node) -> str:
    r = node.record
    if r is None:
        return "not judged"
    if not r.correct:
        return f"failed ({r.status.value})"
    return f"correct, {r.runtime_ms:.4g} ms, {r.speedup:.3g}x" if r.timed else "correct (not timed)"


def build_stark(llm=None, prompt=None, hardware=None, budget=None, public_seeds=(0,), epsilon: float = 0.35,
                n_root: int = 5, n_child_max: int = 3, leaderboard: int = 5, plan_temperature: float = 0.8,
                code_temperature: float = 0.1, seed: int = 0, feedback: str = "P", name: str = "stark") -> Stark:  # fmt: skip
    return Stark(*common_args(llm, prompt, hardware, budget), epsilon=float(epsilon), n_root=n_root,
                 n_child_max=n_child_max, leaderboard=leaderboard, plan_temperature=float(plan_temperature),
                 code_temperature=float(code_temperature), seed=int(seed), public_seeds=tuple(public_seeds),
                 feedback=feedback)  # fmt: skip
