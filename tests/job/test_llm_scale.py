"""LLM methods at the scale of a study: every slot busy while verdicts come, rate limits absorbed,
a budget for the whole job, and no call paid for twice when a killed job is rerun.

The provider is kbx's scripted server over real HTTP through litellm; it counts requests and keeps
each one's span, so in-flight calls are counted, not inferred.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kbx.core.hardware import load_profiles
from kbx.core.record import EvalRecord, Status
from kbx.llm import LLMClient, LLMSettings
from kbx.llm.budget import JobBudget, JobCaps
from kbx.llm.prompt import PromptSettings
from kbx.llm.scripted import Failure, in_flight_share
from kbx.methods.llm import Budget, build_iterative
from kbx.methods.loop import proposers, run_suite
from kbx.tasks import discover
from tests.llm_server import REPO, ScriptedServer, fix_after_error, key_file

MSGS = [{"role": "user", "content": "write add"}]
TASKS = sorted(t for t in discover() if (REPO / "tasks" / t / "expert.py").is_file())  # what fix_after_error answers


def client(server, tmp_path: Path, caps: JobCaps | None = None, **kw) -> LLMClient:
    settings = dict(model="openai/x", api_base=server.base, api_key="sk-scale", cache="off",
                    cache_dir=str(tmp_path / "cache"), retries=0, backoff_s=0.0, timeout_s=20)  # fmt: skip
    return LLMClient(LLMSettings(**{**settings, **kw}), JobBudget(caps or JobCaps()))


def iterative(llm: LLMClient):
    return build_iterative(llm=llm, prompt=PromptSettings(), hardware=load_profiles()["cpu"], budget=Budget())


class _SlowJudge:
    """Stands in for the evaluator's timing only (the loop's scheduling is under test): one attempt
    at a time, `seconds` each, every span recorded."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.spans = seconds, []
        self.one = threading.Lock()

    def evaluate(self, attempts, on_record=None):
        with self.one:
            started = time.monotonic()
            time.sleep(self.seconds)
            self.spans.append((started, time.monotonic()))
        return [EvalRecord(task=a.task.id, task_version=1, status=Status.OK, label=a.label) for a in attempts]


# -- saturation ------------------------------------------------------------------------------------


def test_every_llm_slot_stays_busy_while_verdicts_are_slow(tmp_path):
    """8 tasks x 2 rounds, llm.concurrency 2, verdicts one at a time and twice as slow as a
    completion. While tasks can still call the LLM (every round-0 call), the server sees both slots
    busy although the evaluator is judging, but for litellm's own work between one call and the
    next (a few ms; more on a loaded machine). The old loop (one thread per slot, alternating call
    and verdict) kept both busy under a tenth of that time (0.07 against 0.94, measured once)."""
    tasks = [discover()[t] for t in TASKS[:8]]
    judge = _SlowJudge(1.0)
    with ScriptedServer(fix_after_error, latency_s=0.5) as srv:
        llm = client(srv, tmp_path, concurrency=2)
        results = run_suite(iterative(llm), tasks, judge, rounds=2, parallel=proposers(1, 2))
        spans = sorted(srv.spans)
    assert [len(r.judged) for r in results] == [2] * 8 and len(spans) == 16
    assert llm.slots.peak == 2  # never more than llm.concurrency
    start, end = spans[0][0], sorted(e for _, e in spans)[len(tasks) - 1]  # until round 0's last call ends
    assert any(s < end and e > start for s, e in judge.spans)  # verdicts came during that window
    assert in_flight_share(spans, 2, start, end) > 0.7


# -- rate limits and server errors ----------------------------------------------------------------


def _refuse_first(status: int, headers: dict):
    """Refuse each distinct prompt once with `status` (and headers), then answer it."""
    seen: set[str] = set()

    def answer(messages, n):
        key = repr(messages)
        if key not in seen:
            seen.add(key)
            return Failure(status, headers)
        return "done " + messages[-1]["content"]

    return answer


@pytest.mark.parametrize("retry_after", ["2", ""])
def test_a_rate_limited_call_waits_as_told_then_succeeds(tmp_path, retry_after):
    headers = {"Retry-After": retry_after} if retry_after else {}
    with ScriptedServer(_refuse_first(429, headers)) as srv:
        llm = client(srv, tmp_path, retries=0)  # rate limits have their own count (llm.rate_limit_retries)
        call = llm.complete(MSGS)
        at = [r["at"] for r in srv.requests]
    assert not call.error and call.text == "done write add" and len(at) == 2
    # Retry-After: 2 is obeyed; without it litellm's backoff waits at least its 1 s first step
    assert at[1] - at[0] >= (2.0 if retry_after else 1.0)
    assert (llm.slots.lowest, llm.slots.limit) == (3, 4)  # the 429 took a slot away, the success gave it back


def test_server_errors_are_retried_and_a_bad_request_is_not(tmp_path):
    with ScriptedServer(_refuse_first(503, {})) as srv:
        call = client(srv, tmp_path, retries=1).complete(MSGS)
        assert not call.error and len(srv.requests) == 2
    # each request is one of the call's tries (its trace's child spans), the refused one with its error
    first, second = call.tries
    assert "503" in first.error and not second.error and call.started_s <= first.started_s < second.started_s
    assert call.latency_s == pytest.approx(second.duration_s) and call.failed_s == pytest.approx(first.duration_s)
    with ScriptedServer(lambda m, n: 400) as srv:
        call = client(srv, tmp_path, retries=3).complete(MSGS)
        assert call.error.startswith("BadRequestError") and len(srv.requests) == 1  # retrying cannot help
    with ScriptedServer(lambda m, n: 503) as srv:
        call = client(srv, tmp_path, retries=1).complete(MSGS)
        assert "scripted failure 503" in call.error and len(srv.requests) == 2  # recorded as a provider error


def test_persistent_rate_limits_slow_kbx_down(tmp_path):
    """The provider refuses everything for 4 s. Eight callers, llm.concurrency 4: the slots shrink to
    one and each caller backs off exponentially, so the provider sees a handful of requests in those
    4 s (a client retrying at once would send thousands); then every call goes through."""
    opened = time.monotonic() + 4.0
    with ScriptedServer(lambda m, n: Failure(429) if time.monotonic() < opened else "fine") as srv:
        llm = client(srv, tmp_path, concurrency=4, rate_limit_retries=8)
        threads = [threading.Thread(target=lambda i=i: results.append(llm.complete(MSGS, sample=i))) for i in range(8)]
        results: list = []
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        refused = [r for r in srv.requests if r["at"] < opened]
    assert len(results) == 8 and not any(c.error for c in results)
    assert llm.slots.lowest == 1
    assert len(refused) <= 8 * 3  # at most three tries per caller inside the 4 s: waits of >= 1 s, then >= 2 s


def test_thirty_percent_rate_limited_calls_all_land(tmp_path):
    """A scripted 30 % of prompts answered 429 once (half with Retry-After): every proposal is made."""
    tasks = [discover()[t] for t in TASKS[:6]]
    seen: set[str] = set()

    def answer(messages, n):
        key = repr(messages)
        share = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8
        if key not in seen and share < 0.3:
            seen.add(key)
            return Failure(429, {"Retry-After": "1"} if share < 0.15 else {})
        seen.add(key)
        return fix_after_error(messages, n)

    with ScriptedServer(answer, latency_s=0.1) as srv:
        llm = client(srv, tmp_path, concurrency=3)
        results = run_suite(iterative(llm), tasks, _SlowJudge(0.05), rounds=2, parallel=proposers(1, 3))
    calls = [c.call for r in results for c in r.calls]
    assert len(calls) == 12 and not any(c.error for c in calls)
    assert all(len(r.judged) == 2 for r in results)


# -- the job's budget ------------------------------------------------------------------------------


def test_job_budget_stops_new_calls_and_lets_in_flight_ones_finish(tmp_path):
    """Priced at $1 per million tokens, with a cap about three calls deep: once it is reached no call
    starts (the overshoot is at most the calls in flight), and the tasks that never got a proposal
    say why."""
    tasks = [discover()[t] for t in TASKS[:6]]
    price = {"price_in_usd_per_mtok": 1.0, "price_out_usd_per_mtok": 1.0}
    with ScriptedServer(fix_after_error, latency_s=0.2) as srv:
        probe = client(srv, tmp_path, **price).complete(iterative(client(srv, tmp_path)).messages(tasks[0], []))
        cap = 2.5 * probe.cost_usd
        llm = client(srv, tmp_path, caps=JobCaps(max_cost_usd=cap), concurrency=2, **price)
        results = run_suite(iterative(llm), tasks, _SlowJudge(0.05), rounds=3, parallel=proposers(1, 2),
                            halt=llm.budget.reached)  # fmt: skip
    calls = [c.call for r in results for c in r.calls]
    spent = llm.budget.cost_usd
    assert llm.budget.reached() and spent >= cap and spent == pytest.approx(math.fsum(c.cost_usd for c in calls))
    assert spent - 2 * max(c.cost_usd for c in calls) < cap  # nothing started once the cap was reached
    unstarted = [r for r in results if not r.calls]
    assert unstarted and all(r.judged[0].record.status is Status.NO_CODE for r in unstarted)
    assert all("budget was reached" in r.judged[0].record.reason for r in unstarted)
    assert llm.budget.totals()["budget_refused_calls"] >= 1 and "$" in llm.budget.progress()


def test_a_cost_cap_needs_a_price(tmp_path):
    from kbx.core.errors import ConfigError
    from kbx.job.runner import build_llm
    from tests.llm.test_llm import compose

    base = ("method=iterative", "llm.model=openai/unpriced-local", "llm.api_base=http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="budget.max_cost_usd needs the price of 'openai/unpriced-local'"):
        build_llm(compose(*base, "budget.max_cost_usd=1.0"), tmp_path)
    priced = build_llm(compose(*base, "budget.max_cost_usd=1.0", "llm.price_in_usd_per_mtok=3"), tmp_path)
    assert priced.budget.caps.max_cost_usd == 1.0
    from kbx.job import schema

    with pytest.raises(ConfigError, match="budget.max_total_tokens: expected an integer >= 0, got -1"):
        schema.check(compose(*base, "budget.max_total_tokens=-1"))  # Job.prepare checks it before build_llm


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_job_budget_in_the_summary_and_mlflow(kbx_cli, tmp_path):
    import mlflow

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with ScriptedServer(fix_after_error) as srv:
        code, out, err = kbx_cli(
            "kbx.run", "method=iterative", "task=[Math/add,Activation/gelu,Activation/relu]", "hardware=cpu",
            "iteration.rounds=3", "llm.model=openai/x", f"llm.api_base={srv.base}",
            f"llm.api_key_file={key_file(tmp_path, 'sk-x')}",
            f"llm.cache_dir={tmp_path}/cache", "llm.concurrency=1", "budget.max_total_tokens=1",
            "eval.secret_seed=false", "experiment=budget", f"tracking_uri={uri}", f"hydra.run.dir={tmp_path}/run",
        )  # fmt: skip
        chat = srv.chat_requests()
    assert code == 0, err[-3000:]
    assert len(chat) == 1  # the first call spends the single token allowed; nothing starts after it
    assert "budget was reached" in out + err and "tok/1" in err  # the warning; the progress line
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["budget"])
    job = runs[runs["tags.kbx.role"] == "job"].iloc[0]
    assert job["metrics.budget_reached"] == 1.0 and job["metrics.budget_tasks_not_started"] == 2.0
    assert job["metrics.budget_tokens"] > 1 and "max_total_tokens=1" in job["tags.kbx.stopped"]


# -- resumed spend ---------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_a_killed_job_rerun_pays_for_no_call_it_already_made(tmp_path):
    """One task, 5 rounds of iterative refinement with the full history (every prompt new). The job
    is killed (SIGKILL) when its 4th call arrives, so 3 calls were answered; the rerun replays those
    from the record cache, and the scripted server (restarted on its port) sees only the 2 calls it never answered."""
    rounds, killed_at = 5, 4
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    cmd = [sys.executable, "-m", "kbx.run", "method=iterative", "method.history=full", "task=Math/add",
           "hardware=cpu", f"iteration.rounds={rounds}", "llm.model=openai/x",
           f"llm.api_key_file={key_file(tmp_path, 'sk-x')}",
           f"llm.cache_dir={tmp_path}/cache", "eval.secret_seed=false", "experiment=spend", f"tracking_uri={uri}",
           f"hydra.run.dir={tmp_path}/run"]  # fmt: skip
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    job: dict = {}

    def kill_at_call(messages, n):
        if "Reply with the word ok" not in messages[-1]["content"] and len(first.chat_requests()) == killed_at:
            os.killpg(job["proc"].pid, signal.SIGKILL)
            return Failure(503)
        return fix_after_error(messages, n)

    with ScriptedServer(kill_at_call) as first:  # the rerun's server is on its port: the same endpoint, restarted
        job["proc"] = subprocess.Popen([*cmd, f"llm.api_base={first.base}"], cwd=REPO, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        assert job["proc"].wait(600) == -signal.SIGKILL
        answered = [r["messages"] for r in first.chat_requests()[: killed_at - 1]]
    with ScriptedServer(fix_after_error, port=first.port) as second:
        again = subprocess.run([*cmd, f"llm.api_base={second.base}"], cwd=REPO, env=env, capture_output=True,
                               text=True, timeout=600)  # fmt: skip
        asked = [r["messages"] for r in second.chat_requests()]
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(answered) == killed_at - 1 and not [m for m in asked if m in answered]  # nothing paid twice
    assert len(asked) == rounds - (killed_at - 1)  # exactly the calls never answered
