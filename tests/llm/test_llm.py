"""LLM methods end to end without a real LLM: a scripted OpenAI-compatible server on loopback,
driven through litellm over real HTTP, with the real evaluator on CPU (Triton interpreter)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kbx.core.hardware import load_profiles
from kbx.core.record import EvalRecord, Mismatch, Status
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.llm import LLMClient, LLMError, LLMSettings
from kbx.llm.prompt import PromptSettings, feedback, task_messages
from kbx.methods.base import Proposal
from kbx.methods.llm import Budget, build_best_of_n, build_iterative, build_oneshot
from kbx.methods.loop import run_suite
from kbx.tasks.registry import default_tasks_dir, load_task_id
from tests.llm_server import EXPERT_ADD, ScriptedServer, fenced

CPU = load_profiles()["cpu"]
KEY = "sk-kbx-llm-test-SECRET-0123456789"
SYNTAX_BAD = "def add(input, other, alpha=1, out=None:\n    return input\n"


def task(task_id: str):
    return load_task_id(default_tasks_dir(), task_id)


ADD = task("Math/add")


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalSettings(device="cpu", secret_seed=False, workers=2)) as ev:
        yield ev


def client(server: ScriptedServer | None, tmp_path: Path, cache: str = "off", **kw) -> LLMClient:
    base = server.base if server else "http://127.0.0.1:9/v1"
    settings = dict(model="openai/x", api_base=base, api_key=KEY, cache=cache, cache_dir=str(tmp_path / "cache"),
                    retries=0, backoff_s=0.0, timeout_s=20)  # fmt: skip
    return LLMClient(LLMSettings(**{**settings, **kw}))


def context(llm, **budget):
    return {"llm": llm, "prompt": PromptSettings(), "hardware": CPU, "budget": Budget(**budget)}


# -- prompts and feedback (no server) -----------------------------------------------------------


def test_prompt_variants_come_from_the_task():
    base = task_messages(ADD, PromptSettings(), CPU)[-1]["content"]
    assert ADD.spec.signature in base and ADD.spec.description in base and "```" not in base
    full = task_messages(ADD, PromptSettings(example=True, hardware=True, math=True), load_profiles()["h100"])
    text = full[-1]["content"]
    assert "def scaled_relu" in text  # the worked example
    assert "3350 GB/s" in text and "L2 50 MB" in text  # hardware peaks
    assert "torch.add(input, other, alpha=alpha, out=out)" in text  # the reference as the math


def test_feedback_levels():
    bad = EvalRecord(task="Math/add", task_version=1, status=Status.MISMATCH, reason="case standard differs",
                     cases_total=7, cases_passed=4,
                     mismatch=Mismatch(case="standard", count=3, numel=10, max_abs_err=0.5, indices=((1,),)))  # fmt: skip
    assert "case standard differs" not in feedback(bad, "G")
    e = feedback(bad, "E")
    assert "case standard differs" in e and "3 of 10 elements differ" in e and "4/7" in e
    ok = EvalRecord(task="Math/add", task_version=1, status=Status.OK, timing_skipped_reason="no GPU")
    assert "per-shape profile" not in feedback(ok, "E") and "No per-shape profile: no GPU." in feedback(ok, "P")


def test_history_last_and_full(tmp_path):
    recs = [EvalRecord(task="Math/add", task_version=1, status=Status.RUNTIME_ERROR, message=f"error {i}")
            for i in range(2)]  # fmt: skip
    for mode, expected in (("last", ["error 1"]), ("full", ["error 0", "error 1"])):
        m = build_iterative(**context(client(None, tmp_path)), history=mode)
        m.state(ADD.id).proposed += ["code0\n", "code1\n"]
        msgs = m.messages(ADD, recs)
        fed = [x["content"] for x in msgs if x["role"] == "user" and "Evaluation:" in x["content"]]
        assert [e for e in ("error 0", "error 1") if any(e in f for f in fed)] == expected
        assert msgs[-2]["content"] == "```python\ncode1\n```"


# -- client: cache, errors, preflight -----------------------------------------------------------


def test_client_cache_modes_and_provider_errors(tmp_path):
    msgs = [{"role": "user", "content": "write add"}]
    with ScriptedServer(lambda m, n: 500 if n < 2 else f"answer {n}") as srv:
        failed = client(srv, tmp_path, cache="auto").complete(msgs)  # HTTP 500, no retry: an error, not an exception
        assert failed.error and not failed.text and KEY not in failed.error
        retried = client(srv, tmp_path, cache="auto", retries=1).complete(msgs)  # the retry succeeds
        assert retried.text == "answer 2" and not retried.cached and retried.prompt_tokens == 2
        again = client(srv, tmp_path, cache="auto").complete(msgs)
        assert again.text == "answer 2" and again.cached and again.prompt_tokens == 2
        other = client(srv, tmp_path, cache="auto").complete(msgs, sample=1)  # another sample, another entry
        assert other.text == "answer 3"
        assert srv.requests[0]["auth"] == f"Bearer {KEY}"
    replay = client(None, tmp_path, cache="replay", api_base=srv.base)  # server stopped: no network needed
    replay.preflight()
    assert replay.complete(msgs).text == "answer 2" and replay.complete(msgs, sample=1).text == "answer 3"
    with pytest.raises(LLMError, match="no stored response"):
        replay.complete(msgs, temperature=0.5)
    with pytest.raises(LLMError, match="no stored response"):  # recorded from another server: not its answer
        client(None, tmp_path, cache="replay").complete(msgs)
    stored = "\n".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert KEY not in stored


def test_preflight_names_an_unreachable_endpoint(tmp_path):
    with pytest.raises(LLMError, match=r"preflight failed for model 'openai/x' at http://127.0.0.1:9/v1") as exc:
        client(None, tmp_path).preflight()
    assert "\n" not in str(exc.value) and KEY not in str(exc.value)


# -- loop concurrency ---------------------------------------------------------------------------


class _SlowMethod:
    name = "slow"

    def propose(self, task, round_index, history):
        time.sleep(0.3)  # stands in for an LLM call
        return [Proposal("x = 1\n", "p")]


class _FakeEvaluator:
    def __init__(self):
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def evaluate(self, attempts, on_record=None):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.1)
        with self.lock:
            self.active -= 1
        return [EvalRecord(task=a.task.id, task_version=1, status=Status.OK, label=a.label) for a in attempts]


def test_tasks_advance_concurrently():
    tasks = [task("Activation/gelu"), ADD]
    fake = _FakeEvaluator()
    started = time.perf_counter()
    results = run_suite(_SlowMethod(), tasks, fake, rounds=2, parallel=2)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.3, elapsed  # sequential would be 2 tasks x 2 rounds x 0.4 s = 1.6 s
    assert fake.peak == 2 and [len(r.judged) for r in results] == [2, 2]


def test_evaluator_slots_bound_concurrent_evaluate_calls():
    ev = Evaluator.__new__(Evaluator)  # no worker processes: only the slot logic is under test
    ev.settings = EvalSettings(workers=2)
    ev.slots = threading.BoundedSemaphore(2)
    ev.costs = None  # no ordering by earlier runs' costs (kbx.driver.costs) here
    state = {"active": 0, "peak": 0}
    lock = threading.Lock()

    def fake_one(attempt):
        with lock:
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
        time.sleep(0.05)
        with lock:
            state["active"] -= 1
        return EvalRecord(task="t", task_version=1, status=Status.OK)

    ev._evaluate_one = fake_one
    threads = [threading.Thread(target=ev.evaluate, args=([object()] * 3,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["peak"] == 2


# -- methods through the real evaluator ---------------------------------------------------------


def syntax_then_fix(messages, n):
    """A kernel that does not parse, then kbx's expert kernel once the syntax error is fed back."""
    fed_back = [m["content"] for m in messages if m["role"] == "user" and "Evaluation:" in m["content"]]
    return fenced(EXPERT_ADD if fed_back and "syntax error at line 1" in fed_back[-1] else SYNTAX_BAD)


def test_iterative_feeds_the_error_back_then_replays_offline(evaluator, tmp_path):
    with ScriptedServer(syntax_then_fix) as srv:
        method = build_iterative(**context(client(srv, tmp_path, cache="record")), feedback="E", history="last")
        (result,) = run_suite(method, [ADD], evaluator, rounds=2)
        prompts = srv.chat_requests()
    assert [j.record.status for j in result.judged] == [Status.SYNTAX_ERROR, Status.OK]
    assert "Evaluation:" not in str(prompts[0]["messages"])
    fed_back = prompts[1]["messages"][-1]["content"]
    assert fed_back.startswith("Evaluation: status syntax_error") and "syntax error at line 1" in fed_back
    assert prompts[1]["messages"][-2]["content"] == f"```python\n{SYNTAX_BAD}```"
    assert result.best().correct and result.best().label == "round1/refine"
    assert [c.round for c in result.calls] == [0, 1] and all(c.call.prompt_tokens > 0 for c in result.calls)

    # the server is stopped: replay gives the same completions, hence the same kernels and verdicts
    offline = {"cache": "replay", "api_base": srv.base}
    replayed = build_iterative(**context(client(None, tmp_path, **offline)), feedback="E", history="last")
    (again,) = run_suite(replayed, [ADD], evaluator, rounds=2)
    assert [j.code for j in again.judged] == [j.code for j in result.judged]
    assert [j.record.status for j in again.judged] == [Status.SYNTAX_ERROR, Status.OK]
    assert all(c.call.cached for c in again.calls)
    assert [c.call.text for c in again.calls] == [c.call.text for c in result.calls]
    with pytest.raises(LLMError, match="no stored response"):  # a prompt never recorded
        run_suite(build_iterative(**context(client(None, tmp_path, **offline)), feedback="G"), [ADD], evaluator,
                  rounds=2)  # fmt: skip


def test_best_of_n_keeps_a_correct_sample_within_its_call_budget(evaluator, tmp_path):
    answers = [fenced(SYNTAX_BAD), fenced(EXPERT_ADD), fenced(SYNTAX_BAD), fenced(EXPERT_ADD)]
    with ScriptedServer(lambda m, n: answers[n]) as srv:
        method = build_best_of_n(**context(client(srv, tmp_path), max_calls=3), n=4, temperature=0.9)
        (result,) = run_suite(method, [ADD], evaluator, rounds=2)
        bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == 3 and all(b["temperature"] == 0.9 for b in bodies)  # the cap, not n
    statuses = sorted(j.record.status.value for j in result.judged)
    assert statuses == ["ok", "syntax_error", "syntax_error"] and all(j.round == 0 for j in result.judged)
    assert result.best().correct


def test_token_budget_and_a_provider_error_do_not_stop_the_run(evaluator, tmp_path):
    gelu = task("Activation/gelu")
    with ScriptedServer(lambda m, n: 500 if n == 0 else fenced(SYNTAX_BAD)) as srv:
        # first call (Math/add, round 0) fails with HTTP 500; the run goes on
        oneshot = build_oneshot(**context(client(srv, tmp_path)))
        add, gel = run_suite(oneshot, [ADD, gelu], evaluator, rounds=1, parallel=1)
        assert add.calls[0].call.error and add.judged[0].record.status is Status.LLM_ERROR  # no answer: kbx's side
        assert "scripted failure 500" in add.judged[0].record.reason and not add.judged[0].record.status.judged
        assert gel.judged[0].record.status is Status.SYNTAX_ERROR and not gel.calls[0].call.error
        # the token cap stops refinement once spent: one call (~100 prompt tokens) exceeds 50
        capped = build_iterative(**context(client(srv, tmp_path), max_tokens=50))
        (result,) = run_suite(capped, [ADD], evaluator, rounds=3)
        assert len(result.calls) == 1 and [j.round for j in result.judged] == [0]


# -- job wiring (Hydra compose, no run) ---------------------------------------------------------


def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=["task=Math/add", "hardware=cpu", *overrides])


def test_job_preflight_fails_before_any_task_and_redacts_the_key(tmp_path):
    from kbx.job.runner import Job

    with pytest.raises(LLMError, match="llm.model is not set"):
        Job.prepare(compose("method=oneshot"), tmp_path)
    with pytest.raises(LLMError, match="preflight failed"):
        Job.prepare(compose("method=iterative", "llm.model=openai/x", "llm.api_base=http://127.0.0.1:9/v1",
                            f"llm.api_key={KEY}", "llm.retries=0"), tmp_path)  # fmt: skip
    with ScriptedServer() as srv:
        job = Job.prepare(compose("method=best_of_n", "method.n=2", "llm.model=openai/x", f"llm.api_base={srv.base}",
                                  f"llm.api_key={KEY}", "budget.max_calls=5"), tmp_path)  # fmt: skip
    assert job.method.n == 2 and job.method.budget.max_calls == 5 and job.llm.settings.api_key == KEY
    assert KEY not in job.resolved_yaml() and "<redacted>" in job.resolved_yaml()
    assert job.parallel() == 8  # two proposers per slot of llm.concurrency (4), whatever eval.workers is
    assert Job.prepare(compose("method=reference"), tmp_path).llm is None
