"""What an LLM server really does, scripted (kbx.llm.scripted over real HTTP, through litellm): answers
cut off at their token limit or the server's context window, calls that fail or time out, a server
that answers to any model name, prices that change after answers were cached. Each ends in an
honest status and record; none of these tests needs a worker process."""

from __future__ import annotations

import logging
import math
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kbx.core.hardware import load_profiles
from kbx.core.record import Status
from kbx.core.source import code_is_cut, extract_code
from kbx.job.summary import summarize, table
from kbx.llm import LLMClient, LLMError, LLMSettings
from kbx.llm.budget import JobBudget, JobCaps
from kbx.llm.prompt import PromptSettings
from kbx.llm.scripted import Reply
from kbx.methods.llm import Budget, build_iterative, build_oneshot
from kbx.methods.loop import run_suite
from kbx.tasks.registry import default_tasks_dir, load_task_id
from tests.llm_server import EXPERT_ADD, ScriptedServer, fenced

REPO = Path(__file__).resolve().parents[2]
CPU = load_profiles()["cpu"]
ADD = load_task_id(default_tasks_dir(), "Math/add")
GELU = load_task_id(default_tasks_dir(), "Activation/gelu")
LONG_ANSWER = fenced(EXPERT_ADD, "Here is a careful, complete and well documented kernel for this task.")
MAX_TOKENS = 40  # words, in the scripted server: LONG_ANSWER is cut inside its code
MSGS = [{"role": "user", "content": "write add"}]


def llm(server: ScriptedServer | None, tmp_path: Path, **kw) -> LLMClient:
    settings = {"model": "openai/x", "api_base": server.base if server else "http://127.0.0.1:9/v1",
                "api_key": "sk-test", "cache": "off", "cache_dir": str(tmp_path / "cache"), "retries": 0,
                "backoff_s": 0.0, "timeout_s": 20}  # fmt: skip
    budget = kw.pop("budget", None)
    return LLMClient(LLMSettings(**{**settings, **kw}), budget)


def context(client: LLMClient) -> dict:
    return {"llm": client, "prompt": PromptSettings(), "hardware": CPU, "budget": Budget()}


# -- code extraction ----------------------------------------------------------------------------


def test_an_unclosed_fence_is_a_block_without_its_fence_line():
    cut = "Here it is.\n```python\nimport torch\ndef add(x, y):\n    return x"
    assert extract_code(cut) == "import torch\ndef add(x, y):\n    return x\n" and code_is_cut(cut)
    whole = "```python\na = 1\n```\nThat is all, and it"
    assert extract_code(whole) == "a = 1\n" and not code_is_cut(whole)  # cut in the prose: the code is whole
    assert extract_code("```python\na = 1\n```\nbetter:\n```python\nb = 2\n") == "b = 2\n"
    assert code_is_cut("def add(x, y):\n    return") and code_is_cut("Sure. ```py")


def test_compiling_a_candidate_prints_no_warning_of_its_own():
    """In a process of its own, as the driver is (pytest resets warning filters around each test)."""
    code = "x = 1\nif x is 1:\n    y = '\\d'\n"
    script = f"from kbx.core.source import check_syntax; assert check_syntax({code!r}) == ''; compile({code!r}, 'x', 'exec')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("SyntaxWarning") == 1 and "x:2:" in done.stderr  # only the compile outside kbx warns


# -- answers cut off ----------------------------------------------------------------------------


def test_a_cut_off_answer_is_truncated_and_the_next_prompt_says_so(tmp_path):
    with ScriptedServer(lambda m, n: LONG_ANSWER) as srv:
        method = build_iterative(**context(llm(srv, tmp_path, max_tokens=MAX_TOKENS)), feedback="E", history="last")
        (result,) = run_suite(method, [ADD], evaluator=None, rounds=2)
        second = srv.chat_requests()[1]["messages"]
    records = [j.record for j in result.judged]
    assert [r.status for r in records] == [Status.TRUNCATED, Status.TRUNCATED]
    assert "cut off inside its code" in records[0].reason and f"llm.max_tokens={MAX_TOKENS}" in records[0].reason
    assert records[0].compiled is False and records[0].status.judged  # the method's answer: counted against it
    assert all(c.call.truncated and c.call.finish_reason == "length" for c in result.calls)
    fed_back, shown = second[-1]["content"], second[-2]["content"]
    assert "cut off at the length limit before its code was complete" in fed_back and "syntax error" not in fed_back
    assert shown.startswith('```python\n"""Expert kernel') and shown.count("```") == 2  # fenced once, not twice
    assert summarize([result])["n_truncated"] == 1.0 and "cut off at its token limit" in table([result])


def test_an_answer_the_server_shortened_to_fit_its_window_says_so(tmp_path):
    window = 60
    with ScriptedServer(lambda m, n: LONG_ANSWER, context_window=window) as srv:
        call = llm(srv, tmp_path, max_tokens=1000).complete(MSGS)
        overflow = llm(srv, tmp_path).complete([{"role": "user", "content": "word " * window}])
    assert call.truncated and 0 < call.completion_tokens < 1000
    assert "below llm.max_tokens=1000" in call.cut_note() and "context window" in call.cut_note()
    assert overflow.error and "context window" in overflow.error and not overflow.text  # a prompt too long: an error


def test_an_answer_cut_after_its_code_is_judged_as_written(tmp_path):
    answer = fenced("x = 1\n", "Code:") + " ".join(["more prose"] * 40)
    with ScriptedServer(lambda m, n: answer) as srv:
        client = llm(srv, tmp_path, max_tokens=MAX_TOKENS)
        call = client.complete(MSGS)
    (proposal,) = build_oneshot(**context(client)).proposals(ADD, [("oneshot", call)])
    assert call.truncated and proposal.code == "x = 1\n" and proposal.cut_off == ""


# -- calls that fail ----------------------------------------------------------------------------


def test_tasks_whose_calls_all_fail_are_llm_errors_left_out_of_the_rates(tmp_path):
    def answer(messages, n):
        return 500 if "Task Math/add." in messages[-1]["content"] else LONG_ANSWER

    with ScriptedServer(answer) as srv:
        results = run_suite(build_oneshot(**context(llm(srv, tmp_path, max_tokens=MAX_TOKENS))), [ADD, GELU],
                            evaluator=None, rounds=1)  # fmt: skip
    add, gelu = (r.best() for r in results)
    assert add.status is Status.LLM_ERROR and add.reason.startswith("no answer from the LLM: InternalServerError")
    assert add.reason.endswith("scripted failure 500 (1 of 1 calls failed)")
    assert gelu.status is Status.TRUNCATED
    s = summarize(results)
    assert (s["n_tasks"], s["n_llm_error"], s["n_truncated"], s["correct_rate"]) == (2.0, 1.0, 1.0, 0.0)
    assert "1 LLM errors (no answer from the LLM)" in table(results)


def test_a_timeout_is_not_retried_and_latency_counts_the_answered_try(tmp_path):
    with ScriptedServer(lambda m, n: Reply("late", delay_s=3.0) if n == 0 else "fine") as srv:
        started = time.monotonic()
        slow = llm(srv, tmp_path, timeout_s=0.5, retries=2).complete(MSGS)
        waited = time.monotonic() - started
        assert len(srv.requests) == 1  # one try: the server is still writing the abandoned answer
        fine = llm(srv, tmp_path, timeout_s=5).complete(MSGS)
    assert "Timeout" in slow.error and waited < 2.5 and 0.4 < slow.failed_s < 2.5 and slow.latency_s == 0.0
    assert fine.error == "" and fine.latency_s < 1.0 and fine.failed_s == 0.0
    with ScriptedServer(lambda m, n: 503 if n == 0 else Reply("ok", delay_s=0.3)) as srv:
        retried = llm(srv, tmp_path, retries=1).complete(MSGS)  # a 5xx is retried; its time is not the answer's
    assert retried.text == "ok" and 0.3 <= retried.latency_s < 1.5 and retried.failed_s < 0.3


def test_calls_in_flight_show_in_the_progress_line(tmp_path):
    with ScriptedServer(lambda m, n: Reply("ok", delay_s=1.0)) as srv:
        client = llm(srv, tmp_path)
        worker = threading.Thread(target=client.complete, args=(MSGS,))
        worker.start()
        time.sleep(0.5)
        busy = client.in_flight()
        worker.join()
    assert busy.startswith("LLM: 1 in flight") and client.in_flight().startswith("LLM: 0 in flight")


# -- the preflight ------------------------------------------------------------------------------


def test_the_preflight_is_short_and_says_what_it_waits_for(tmp_path, caplog):
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        caplog.set_level(logging.INFO, logger="kbx.llm.client")
        started = time.monotonic()
        with pytest.raises(LLMError, match=r"no answer from model 'openai/x' at .* within 1 s") as exc:
            llm(None, tmp_path, api_base=base, preflight_timeout_s=1.0).preflight()
    assert time.monotonic() - started < 6 and "\n" not in str(exc.value)
    assert f"asking openai/x at {base} for one token" in caplog.text


# -- the model and the price --------------------------------------------------------------------


def test_a_server_answering_as_another_model_is_warned_about_once_and_recorded(tmp_path, caplog):
    with ScriptedServer(lambda m, n: "ok", served_model="/models/SmolLM2-135M.gguf") as srv:
        client = llm(srv, tmp_path, model="openai/gpt-4o-mini")
        client.preflight()
        calls = [client.complete(MSGS, sample=i) for i in range(2)]
    warned = [r for r in caplog.records if "answered as model" in r.getMessage()]
    assert len(warned) == 1 and "'gpt-4o-mini'" in warned[0].getMessage()
    assert {c.served_model for c in calls} == {"/models/SmolLM2-135M.gguf"}
    assert client.other_models == {"/models/SmolLM2-135M.gguf"}
    with ScriptedServer(lambda m, n: Reply("ok", model="gpt-4o-mini-2024-07-18")) as srv:
        caplog.clear()
        llm(srv, tmp_path, model="openai/gpt-4o-mini").complete(MSGS)  # a dated version of the name asked for
    assert "answered as model" not in caplog.text


def test_a_server_that_echoes_any_name_is_caught_by_its_model_list(tmp_path, caplog):
    """llama-cpp-python answers as whatever name was asked for; its GET /v1/models says what it serves."""
    with ScriptedServer(lambda m, n: "ok", served_model="smollm2", echo_model=True) as srv:
        misnamed = llm(srv, tmp_path, model="openai/gpt-4o-mini")
        misnamed.preflight()
        call = misnamed.complete(MSGS)
        named = llm(srv, tmp_path, model="openai/smollm2")
        named.preflight()
    assert call.served_model == "gpt-4o-mini" and misnamed.other_models == {"smollm2"} and not named.other_models
    warned = [r.getMessage() for r in caplog.records if "lists the model" in r.getMessage()]
    assert len(warned) == 1 and "'smollm2', not 'gpt-4o-mini'" in warned[0]


def test_a_custom_endpoint_gets_no_list_price_and_cached_answers_cost_todays_price(tmp_path):
    named_like_gpt = llm(None, tmp_path, model="openai/gpt-4o-mini")  # a local server under a commercial name
    assert math.isnan(named_like_gpt.cost(1000, 1000)) and not named_like_gpt.priced()
    assert "llm.api_base is set" in named_like_gpt.price_source()
    listed = llm(None, tmp_path, model="openai/gpt-4o-mini", api_base="")
    assert listed.cost(1_000_000, 0) > 0 and listed.price_source() == "litellm price list"

    with ScriptedServer(lambda m, n: " ".join(["word"] * 100)) as srv:
        unpriced = llm(srv, tmp_path, cache="auto").complete(MSGS)
        assert math.isnan(unpriced.cost_usd)
        cap = JobBudget(JobCaps(max_cost_usd=0.001))
        priced = llm(srv, tmp_path, cache="auto", price_in_usd_per_mtok=1.0, price_out_usd_per_mtok=10.0, budget=cap)
        again = priced.complete(MSGS)
    assert again.cached and again.cost_usd == pytest.approx((2 * 1.0 + 100 * 10.0) / 1e6)
    assert cap.cost_usd == pytest.approx(again.cost_usd) and cap.reached()  # $0.001002 of a $0.001 cap


# -- the loop -----------------------------------------------------------------------------------


def test_a_oneshot_task_is_reported_as_soon_as_its_one_round_is_judged(tmp_path):
    """Not once every other task has been proposed for (rounds it never uses come after all of round 0)."""
    def answer(messages, n):  # Math/add answers at once; Activation/gelu's answer takes 2 s
        return LONG_ANSWER if "Task Math/add." in messages[-1]["content"] else Reply(LONG_ANSWER, delay_s=2.0)

    done: dict[str, float] = {}
    with ScriptedServer(answer) as srv:
        client = llm(srv, tmp_path, max_tokens=MAX_TOKENS)
        client.preflight()  # litellm imported before the clock starts
        run_suite(build_oneshot(**context(client)), [ADD, GELU], evaluator=None, rounds=3, parallel=1,
                  on_task_done=lambda r: done.setdefault(r.task.id, time.monotonic()))  # fmt: skip
    assert done[GELU.id] - done[ADD.id] >= 1.5


# -- analysis -----------------------------------------------------------------------------------


def test_analysis_names_models_and_settings_where_one_method_covers_several():
    import pandas as pd

    from analysis.load import drop_replays, variant_labels

    frame = pd.DataFrame({"method": ["oneshot"] * 4 + ["geak", "geak", "reference"],
                          "model": ["m1", "m2", "m2", "m2", "m1", "m1", "none"],
                          "llm_settings": ["aaaaaaaa1", "aaaaaaaa1", "bbbbbbbb2", "bbbbbbbb2", "s", "s", "none"],
                          "task": ["t"] * 7, "hardware": ["cpu"] * 7, "run_id": list("1234567"),
                          "cache_replay": [False, False, False, True, False, True, False]})  # fmt: skip
    frame["method"] = variant_labels(frame)
    assert list(frame["method"]) == ["oneshot (m1)", "oneshot (m2, aaaaaa)", "oneshot (m2, bbbbbb)",
                                     "oneshot (m2, bbbbbb)", "geak", "geak", "reference"]  # fmt: skip
    kept, left_out = drop_replays(frame)
    assert left_out == 2 and list(kept["run_id"]) == ["1", "2", "3", "5", "7"]  # replays of answers judged here
    alone, none_left_out = drop_replays(frame[frame["run_id"] != "3"])
    assert none_left_out == 1 and "4" in set(alone["run_id"])  # the only judging of its answers: kept, marked
