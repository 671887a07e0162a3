"""Scripts for kbx's scripted OpenAI-compatible server (kbx.llm.scripted), used by the LLM tests."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path

from kbx.llm.scripted import ScriptedServer as _Server

REPO = Path(__file__).resolve().parents[1]
ERROR_MARK = "tl.lod"  # appears in the fed-back error text once the failure is reported
REFLECTION = "Reflection: tl.lod is a typo for tl.load."


def expert(task_id: str) -> str:
    return (REPO / "tasks" / task_id / "expert.py").read_text()


def broken(task_id: str) -> str:
    """The expert kernel with its first tl.load misspelt: fails at the first launch, with a traceback."""
    return expert(task_id).replace("tl.load(", "tl.lod(", 1)


EXPERT_ADD, BROKEN_ADD = expert("Math/add"), broken("Math/add")


def fenced(code: str, prose: str = "Here is the kernel.") -> str:
    return f"{prose}\n\n```python\n{code}```\n"


def fix_after_error(messages: list[dict], n: int) -> str | int:
    """For the task named in the prompt ("Task Math/add."), kbx's expert kernel with a misspelt
    tl.load first, and the expert kernel itself once the evaluator's error text is in the prompt.
    The preflight ping gets 'ok'."""
    last = messages[-1]["content"]
    if "Reply with the word ok" in last:
        return "ok"
    found = re.search(r"^Task (\S+/\S+)\.$", "\n".join(m["content"] for m in messages), re.MULTILINE)
    if not found:
        return "I do not know which task this is."
    if any(m["role"] == "user" and "Evaluation:" in m["content"] and ERROR_MARK in m["content"] for m in messages):
        return fenced(expert(found.group(1)), "Fixed: tl.lod is not a Triton function; use tl.load.")
    return fenced(broken(found.group(1)))


def roles_script(fail_first_judge: bool = False):
    """Answers by role: judges score, reflectors reflect, the test writer writes a test, planners
    plan with anchors; every kernel-writing role answers for the task in the prompt with its broken
    kernel until the evaluator's error text is in the prompt, then with the working one."""
    state = {"judged": 0}

    def answer(messages, n):
        last = messages[-1]["content"]
        if "Reply with the word ok" in last:
            return "ok"
        if "Score it from 0 to 1" in last:
            state["judged"] += 1
            if fail_first_judge and state["judged"] == 1:
                return 500
            return json.dumps({"fusion": 0.5, "memory access": 2.0, "occupancy": -1})
        if "Reflect:" in last:
            return REFLECTION
        if "write a pytest test" in last:
            return fenced("def test_add():\n    assert True\n")
        found = re.search(r"^Task (\S+/\S+)\.$", last, re.MULTILINE)
        task_id = found.group(1) if found else "Math/add"
        if "Plan ONE transformation" in last:
            return "Plan: one program per 1024 elements.\n" + fenced(f"# EDIT BEGIN\n{expert(task_id)}# EDIT END\n")
        error_seen = "Evaluation:" in last and ERROR_MARK in last
        return fenced(expert(task_id) if error_seen else broken(task_id))

    return answer


class ScriptedServer(_Server):
    """The scripted server, answering `fix_after_error` unless told otherwise."""

    def __init__(self, answer: Callable[[list[dict], int], object] = fix_after_error, latency_s: float = 0.0, **kw):
        super().__init__(answer, latency_s, **kw)


if __name__ == "__main__":  # manual use: python tests/llm_server.py  (serves until interrupted)
    with ScriptedServer() as s:
        print(s.base, flush=True)
        threading.Event().wait()


def key_file(directory, key: str) -> str:
    """A file holding `key`, for llm.api_key_file (a key on the command line is refused)."""
    from pathlib import Path

    path = Path(directory) / "api-key.txt"
    path.write_text(key + "\n")
    return str(path)
