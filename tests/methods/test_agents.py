"""GEAK, KernelAgent and STARK against a scripted server (`roles_script`), with the real
evaluator on CPU."""

from __future__ import annotations

import pytest

from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.methods.geak import build_geak, judge_score
from kbx.methods.kernelagent import banned_calls, build_kernelagent
from kbx.methods.loop import run_suite
from kbx.methods.stark import build_stark
from tests.llm.test_llm import ADD, client, context
from tests.llm_server import ERROR_MARK, REFLECTION, ScriptedServer, roles_script

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalSettings(device="cpu", secret_seed=False, workers=2)) as ev:
        yield ev


def roles(result) -> dict[str, int]:
    out: dict[str, int] = {}
    for logged in result.calls:
        out[logged.call.role] = out.get(logged.call.role, 0) + 1
    return out


def test_geak_reflects_on_the_verdict_and_a_failed_judge_call_does_not_stop_it(evaluator, tmp_path):
    with ScriptedServer(roles_script(fail_first_judge=True)) as srv:
        method = build_geak(**context(client(srv, tmp_path)), candidates=2)
        (result,) = run_suite(method, [ADD], evaluator, rounds=2)
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests()]
    assert [(j.round, j.record.correct) for j in result.judged] == [(0, False), (0, False), (1, True), (1, True)]
    # debug-mode generation saw the reflection and the evaluator's error
    assert any(REFLECTION in p and ERROR_MARK in p for p in prompts)
    assert roles(result) == {"generator": 4, "judge": 4, "reflector": 2}
    assert sum(bool(c.call.error) for c in result.calls) == 1  # the failed judge call, logged
    assert result.best().correct


def test_geak_pool_keeps_the_fastest_and_replaces_the_slowest():
    from kbx.core.record import EvalRecord, Status

    def rec(speedup):
        return EvalRecord(task="t", task_version=1, status=Status.OK, timed=True, speedup=speedup, runtime_ms=1.0,
                          cases_total=1, cases_passed=1)  # fmt: skip

    geak = build_geak(**context(object()), ancestors=2)
    judged = [("cand0", "a", rec(1.0)), ("cand1", "b", rec(3.0)), ("cand0", "c", rec(2.0)), ("cand1", "d", rec(0.5))]
    assert [code for _, code, _ in geak.pool(judged)] == ["b", "c"]  # upstream would have kept "a"
    assert judge_score('{"fusion": 0.5, "occupancy": 2, "x": -1}') == 1.5 and judge_score("no json") == 0.0


def test_kernelagent_first_pass_wins_and_refines_with_the_test_and_verdict(evaluator, tmp_path):
    with ScriptedServer(roles_script()) as srv:
        method = build_kernelagent(**context(client(srv, tmp_path)), workers=2)
        (result,) = run_suite(method, [ADD], evaluator, rounds=3)
        requests = srv.chat_requests()
    assert roles(result) == {"test_writer": 1, "generator": 2, "refiner": 2}  # round 2: someone passed, all stop
    temps = sorted(r["body"]["temperature"] for r in requests if "write a pytest" not in r["messages"][-1]["content"])
    assert temps[:2] == [0.8, 0.8] and temps[-1] == pytest.approx(0.9)  # seeds (and refines) at 0.8 + 0.1 i
    refine = [r["messages"][-1]["content"] for r in requests if "Current kernel:" in r["messages"][-1]["content"]]
    assert refine and all("def test_add" in p and ERROR_MARK in p for p in refine)
    assert [j.round for j in result.judged] == [0, 0, 1, 1] and result.best().correct
    assert banned_calls("y = torch.nn.functional.relu(x)\nz = torch.matmul(a, b)") == ["torch.nn.functional",
                                                                                         "torch.matmul/mm/bmm"]


def test_stark_debugs_a_failed_node_then_plans_from_the_leader(evaluator, tmp_path):
    with ScriptedServer(roles_script()) as srv:
        method = build_stark(**context(client(srv, tmp_path)), epsilon=0.0)
        (result,) = run_suite(method, [ADD], evaluator, rounds=3)
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests()]
    assert [c.call.role for c in result.calls] == ["planner", "coder", "debugger", "planner", "coder"]
    assert [j.record.label for j in result.judged] == ["round0/node1", "round1/node2", "round2/node3"]
    assert [j.record.correct for j in result.judged] == [False, True, False]
    tree = method.trees[ADD.id]
    assert [n.parent for n in tree.nodes] == [-1, 0, 1, 2]  # root -> seed -> its fix -> a plan from the fix
    assert any("Leaderboard: node 2" in p for p in prompts)  # the plan agent saw the correct node
    assert result.best().label == "round1/node2"


def test_stark_stops_at_the_call_budget(evaluator, tmp_path):
    with ScriptedServer(roles_script()) as srv:
        method = build_stark(**context(client(srv, tmp_path), max_calls=3), epsilon=0.0)
        (result,) = run_suite(method, [ADD], evaluator, rounds=4)
    assert len(result.calls) == 3 and [j.round for j in result.judged] == [0, 1]
