"""One chat-completion client over litellm: bounded concurrency, retries, a content-keyed cache.

Cache modes (`llm.cache`):
  off     every call goes to the provider; nothing is stored.
  record  every call goes to the provider; the response is stored (overwriting).
  replay  responses come from the store only; a miss is an error (no network at all).
  auto    stored responses are reused; misses go to the provider and are stored.
A cache key hashes what decides the answer: the model, the endpoint (llm.api_base), the messages,
the sampling parameters and the sample index, so N samples of one prompt are N entries, a rerun
gets the same N texts back, bit for bit, and an answer recorded from one server is never replayed
for another. The API key is never part of a key, a stored entry, a log line or an error message.

What a call records (Call): the server's finish_reason (an answer cut at its token limit is
"length", whether at llm.max_tokens or where the server's context window ran out), the model name
the server answered with (a local server answers to any name: a name other than the one asked for
is warned about once and recorded), tokens, and the cost at the current price (llm.price_* when
set; else litellm's list price, which a custom llm.api_base never gets: a local server named like a
commercial model is not billed like one). latency_s is the wall time of the answered request, from
sending it to its whole answer: it includes time the request waited in the server's own queue
(which no client can see), and excludes kbx's wait for a slot and before a retry; failed tries
are in failed_s. A timed-out call is not retried (kbx.llm.pacing.timed_out says why).

Retries and pacing are kbx.llm.pacing's (Retry-After honoured, slots that shrink under persistent
rate limiting); the job-wide spending cap is kbx.llm.budget's.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import math
import os
import re
import threading
import time
from pathlib import Path

from kbx.core.errors import MethodError
from kbx.core.secrets import redact
from kbx.llm.backend import litellm
from kbx.llm.budget import JobBudget, JobCaps
from kbx.llm.pacing import (
    RATE_LIMITED,
    AdaptiveSlots,
    retry_wait_s,
    retryable,
    status_of,
    timed_out,
)

log = logging.getLogger(__name__)


CACHE_MODES = ("off", "record", "replay", "auto")
PREFLIGHT_MESSAGES = [{"role": "user", "content": "Reply with the word ok."}]
CACHE_KEY_VERSION = 2  # 2: the endpoint is part of the key
LENGTH = "length"  # the finish_reason of an answer that stopped at its token limit


TOKENS_PER_MTOK = 1_000_000


class LLMError(MethodError):
    """The LLM cannot be used as configured (no key, endpoint unreachable, replay miss)."""


class BudgetReached(Exception):
    """No call was started: the job's budget (kbx.llm.budget) is spent. Carries the reason."""


@dataclasses.dataclass(frozen=True)
class LLMSettings:
    model: str = ""
    api_base: str = ""
    api_key: str = ""  # empty: the provider's environment variable (e.g. OPENAI_API_KEY)
    temperature: float = 0.0
    max_tokens: int = 8192
    concurrency: int = 4  # LLM calls in flight at once, over all tasks
    retries: int = 2  # extra tries after a failed call (other than a rate limit or a timeout)
    rate_limit_retries: int = 8  # extra tries after HTTP 429, each after the server's Retry-After
    backoff_s: float = 2.0  # least wait before retry i: backoff_s * 2**i (else litellm's backoff)
    price_in_usd_per_mtok: float = 0.0  # 0: litellm's price list (never for a custom api_base)
    price_out_usd_per_mtok: float = 0.0
    timeout_s: float = 600.0
    preflight_timeout_s: float = 30.0  # the one-token call before any task: a server that is up answers in seconds
    cache: str = "auto"
    cache_dir: str = ".kbx_cache/llm"

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise LLMError(f"llm.cache must be one of {', '.join(CACHE_MODES)}, got {self.cache!r}")
        if not self.model:
            raise LLMError("llm.model is not set (any litellm model string, e.g. openai/<name> with llm.api_base)")
        if self.concurrency < 1:
            raise LLMError(f"llm.concurrency must be a positive integer, got {self.concurrency!r}")

    def where(self) -> str:
        return f" at {self.api_base}" if self.api_base else ""


@dataclasses.dataclass(frozen=True)
class Try:
    """One request to the provider within a call: when it started (seconds since the epoch), how long
    it took, and why it failed ("" when it answered)."""

    started_s: float
    duration_s: float
    error: str = ""


@dataclasses.dataclass(frozen=True)
class Call:
    """One completion as the method saw it, with its accounting. `error` is "" on success. `started_s`
    (seconds since the epoch), the model, its sampling parameters and every request made (`tries`,
    none for a cache hit) are what a trace of the call shows (kbx.tracking.traces)."""

    role: str
    sample: int
    messages: tuple
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = math.nan  # NaN: no price known (LLMClient.cost)
    latency_s: float = 0.0  # the answered request, send to whole answer (server queue included); 0 for a cache hit
    cached: bool = False
    error: str = ""
    key: str = ""
    model: str = ""
    temperature: float = math.nan
    max_tokens: int = 0  # the limit the call asked for
    started_s: float = 0.0
    tries: tuple[Try, ...] = ()
    finish_reason: str = ""  # the server's: "stop", "length" (cut at a token limit), ...; "" unknown or failed
    served_model: str = ""  # the model name the server answered with ("" where it named none)
    failed_s: float = 0.0  # time spent in tries that failed (a timeout: llm.timeout_s)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def truncated(self) -> bool:
        return self.finish_reason == LENGTH

    def cut_note(self) -> str:
        """Where a truncated answer stopped, in words: at llm.max_tokens, or earlier, where the server's
        context window ran out (it shortens the answer to fit, and says only "length")."""
        if 0 < self.completion_tokens < self.max_tokens:
            return (f"after {self.completion_tokens} tokens, below llm.max_tokens={self.max_tokens}: the server "
                    f"stopped it where the prompt ({self.prompt_tokens} tokens) and the answer filled its context window")
        return f"at its token limit, llm.max_tokens={self.max_tokens}"


@dataclasses.dataclass(frozen=True)
class _Answer:
    """What one call to the provider gave, before the Call is assembled."""

    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    served_model: str = ""
    latency_s: float = 0.0
    error: str = ""


class LLMClient:
    """Thread-safe: any number of threads may call `complete`; at most `concurrency` reach the provider."""

    def __init__(self, settings: LLMSettings, budget: JobBudget | None = None) -> None:
        self.settings = settings
        self.slots = AdaptiveSlots(settings.concurrency)
        self.budget = budget or JobBudget(JobCaps())
        self.cache_dir = Path(settings.cache_dir)
        self.warned: set[str] = set()  # what was warned about once (a served model name, a kind of cut answer)
        self.warned_lock = threading.Lock()
        self.other_models: set[str] = set()  # names the server answered as or lists, other than the one asked for

    # -- public -------------------------------------------------------------------------------

    def complete(self, messages: list[dict], *, role: str = "generator", sample: int = 0,
                 temperature: float | None = None) -> Call:  # fmt: skip
        """One completion; provider failures come back as a Call with `error` set (never raised).

        Raises LLMError only for a replay miss, which means the run cannot be reproduced, and
        BudgetReached when the job's budget is spent (no call is started then).
        """
        s = self.settings
        params = {"temperature": s.temperature if temperature is None else float(temperature),
                  "max_tokens": int(s.max_tokens)}  # fmt: skip
        key = cache_key(s.model, s.api_base, messages, params, sample)
        frozen = tuple(dict(m) for m in messages)
        traced = {"model": s.model, **params, "started_s": time.time()}
        if not self.budget.admit():
            raise BudgetReached(self.budget.reached())
        if s.cache in ("replay", "auto"):
            hit = self._load(key)
            if hit is not None:
                return self._replayed(hit, Call(role, sample, frozen, "", cached=True, key=key, **traced))
            if s.cache == "replay":
                raise LLMError(f"llm.cache=replay: no stored response for this prompt (key {key[:16]}) "
                               f"in {self.cache_dir}; record it first with llm.cache=record or auto")  # fmt: skip
        made: list[Try] = []
        a = self._call_with_retries(messages, params, made)
        call = Call(role, sample, frozen, a.text, a.prompt_tokens, a.completion_tokens,
                    self.cost(a.prompt_tokens, a.completion_tokens) if not a.error else math.nan, a.latency_s, False,
                    a.error, key, **traced, tries=tuple(made), finish_reason=a.finish_reason,
                    served_model=a.served_model, failed_s=math.fsum(t.duration_s for t in made if t.error))  # fmt: skip
        if not a.error:
            self._note(call)
            if s.cache in ("record", "auto"):
                self._store(key, {"model": s.model, "api_base": s.api_base, "params": params, "sample": sample,
                                  "messages": messages, "text": a.text, "prompt_tokens": a.prompt_tokens,
                                  "completion_tokens": a.completion_tokens, "finish_reason": a.finish_reason,
                                  "served_model": a.served_model})  # fmt: skip
        return call

    def preflight(self) -> None:
        """A one-token call, so a missing key or an unreachable endpoint fails before any task starts,
        within llm.preflight_timeout_s (a line says what it waits for)."""
        if self.settings.cache == "replay":
            return
        s = self.settings
        log.info("asking %s%s for one token before any task starts (at most %g s, llm.preflight_timeout_s)",
                 s.model, s.where(), s.preflight_timeout_s)  # fmt: skip
        try:
            response = self._litellm_call(PREFLIGHT_MESSAGES, {"temperature": 0.0, "max_tokens": 1}, num_retries=0,
                                          timeout_s=s.preflight_timeout_s)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - every provider error becomes one line
            if timed_out(exc):
                raise LLMError(f"LLM preflight: no answer from model {s.model!r}{s.where()} within "
                               f"{s.preflight_timeout_s:g} s (llm.preflight_timeout_s): the server is down, still "
                               "loading its model, or busy with other requests") from None  # fmt: skip
            raise LLMError(f"LLM preflight failed for model {s.model!r}{s.where()}: {self._describe(exc)}") from None
        self._check_served(str(getattr(response, "model", "") or ""))
        if s.api_base:
            self._check_listed()

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollars for these tokens at the current price: llm.price_*_usd_per_mtok when set, else
        litellm's list price for llm.model, except behind a custom llm.api_base (a local or private
        server bills nothing like the list); NaN where no price is known. Cached answers are priced
        this way too, so a price set after they were recorded counts for them."""
        s = self.settings
        if s.price_in_usd_per_mtok or s.price_out_usd_per_mtok:
            return (prompt_tokens * s.price_in_usd_per_mtok + completion_tokens * s.price_out_usd_per_mtok) / TOKENS_PER_MTOK
        if s.api_base:
            return math.nan
        try:
            prompt, completion = litellm().cost_per_token(model=s.model, prompt_tokens=prompt_tokens,
                                                          completion_tokens=completion_tokens)  # fmt: skip
            return float(prompt) + float(completion)
        except Exception:  # noqa: BLE001 - litellm raises for a model it has no price for
            return math.nan

    def priced(self) -> bool:
        """Whether a call's cost is known (see `cost`)."""
        return not math.isnan(self.cost(1, 1))

    def price_source(self) -> str:
        """Where the price comes from, for the job's record."""
        s = self.settings
        if s.price_in_usd_per_mtok or s.price_out_usd_per_mtok:
            return "llm.price_in_usd_per_mtok/price_out_usd_per_mtok"
        if s.api_base:
            return "none: llm.api_base is set, so litellm's list price does not apply (set llm.price_*_usd_per_mtok)"
        return "litellm price list" if self.priced() else "none: litellm has no price for this model"

    def in_flight(self) -> str:
        """For the progress line: calls at the provider now, and spend so far."""
        return f"LLM: {self.slots.held} in flight, {self.budget.progress()} so far"

    @functools.cached_property
    def asked_name(self) -> str:
        """The model name sent to the server (llm.model without its litellm provider prefix)."""
        s = self.settings
        try:
            return str(litellm().get_llm_provider(s.model, api_base=s.api_base or None)[0])
        except Exception:  # noqa: BLE001 - an unknown provider: the name as written
            return s.model.split("/", 1)[-1]

    # -- internals ----------------------------------------------------------------------------

    def _replayed(self, hit: dict, asked: Call) -> Call:
        """A stored answer as the Call `asked` (a cache hit), priced now (its tokens at the current price) and
        counted against the budget."""
        tokens = (int(hit["prompt_tokens"]), int(hit["completion_tokens"]))
        cost = self.cost(*tokens)
        self.budget.spend(cost, sum(tokens))
        call = dataclasses.replace(asked, text=hit["text"], prompt_tokens=tokens[0], completion_tokens=tokens[1],
                                   cost_usd=cost, finish_reason=str(hit.get("finish_reason") or ""),
                                   served_model=str(hit.get("served_model") or ""))  # fmt: skip
        self._note(call)
        return call

    def _call_with_retries(self, messages: list[dict], params: dict, made: list[Try]) -> _Answer:
        """Tries until an answer, or the error of the last try; each request made is appended to `made`.
        latency_s is the answered try's time at the provider; neither it nor a failed try's time counts the
        wait for a slot or before a retry. Rate limits and other failures have their own retry counts; a
        timeout is not retried; a wait before a retry holds no slot."""
        s = self.settings
        tries = {True: 0, False: 0}  # rate-limited, other failures
        while True:
            try:
                with self.slots.hold():  # the budget is asked, and charged, while the slot is held
                    if not self.budget.admit():
                        raise BudgetReached(self.budget.reached())
                    started, started_s, failure = time.perf_counter(), time.time(), ""
                    try:
                        response = self._litellm_call(messages, params, num_retries=0)
                    except Exception as exc:
                        failure = self._describe(exc)
                        raise
                    finally:
                        made.append(Try(started_s, time.perf_counter() - started, failure))
                    answer = _answer_of(response, made[-1].duration_s)
                    self.budget.spend(self.cost(answer.prompt_tokens, answer.completion_tokens),
                                      answer.prompt_tokens + answer.completion_tokens)  # fmt: skip
                self.slots.succeeded()
                return answer
            except BudgetReached:
                raise
            except Exception as exc:  # noqa: BLE001 - a provider error must not stop the run
                error = self._describe(exc)
                limited = status_of(exc) == RATE_LIMITED
                if limited:
                    self.slots.refused()
                allowed = s.rate_limit_retries if limited else s.retries
                tries[limited] += 1
                if tries[limited] > allowed or not retryable(exc) or timed_out(exc):
                    why = " (a timeout is not retried)" if timed_out(exc) and tries[limited] <= allowed else ""
                    log.warning("LLM call failed for good after %d tries%s: %s", sum(tries.values()), why, error)
                    return _Answer(error=error)
                wait = retry_wait_s(exc, tries[limited], allowed, s.backoff_s)
                log.warning("LLM call failed (try %d of %d), retrying in %.1f s: %s", tries[limited], allowed + 1,
                            wait, error)  # fmt: skip
                time.sleep(wait)

    def _litellm_call(self, messages: list[dict], params: dict, num_retries: int, timeout_s: float = 0.0):
        s = self.settings
        kwargs = {"model": s.model, "messages": messages, "timeout": timeout_s or s.timeout_s,
                  "num_retries": num_retries, **params}  # fmt: skip
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if s.api_key:
            kwargs["api_key"] = s.api_key
        return litellm().completion(**kwargs)

    def _note(self, call: Call) -> None:
        """Once per job each: a served model name other than the one asked for, an answer cut at its limit."""
        self._check_served(call.served_model)
        if not call.truncated:
            return
        early = 0 < call.completion_tokens < call.max_tokens
        if self._first("cut:window" if early else "cut:limit"):
            fix = ("give the server a larger context window, or shorten the prompts" if early
                   else "raise llm.max_tokens if the model needs more room")  # fmt: skip
            log.warning("an LLM answer was cut off %s; an attempt whose code was cut is recorded as `truncated`, "
                        "not judged (%s)", call.cut_note(), fix)  # fmt: skip

    def _check_served(self, served: str) -> None:
        asked = self.asked_name
        if served and not same_model(asked, served) and self._first(f"served:{served}"):
            self.other_models.add(served)
            log.warning("the server%s answered as model %r, not %r (llm.model=%s): it may serve another model than "
                        "the one asked for; kbx records both (job run param llm_model, tag kbx.llm_served_model)",
                        self.settings.where(), served, asked, self.settings.model)  # fmt: skip

    def _check_listed(self) -> None:
        """The models the server lists (GET {api_base}/models, which OpenAI-compatible servers answer): a
        server that serves one model under any name (llama-cpp-python echoes the name asked for in its
        answers) shows here that it serves another. A server without the listing is taken at its word."""
        import requests

        s = self.settings
        headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        try:
            reply = requests.get(s.api_base.rstrip("/") + "/models", headers=headers, timeout=s.preflight_timeout_s)
            listed = [str(m["id"]) for m in reply.json()["data"]] if reply.ok else []
        except (requests.exceptions.RequestException, ValueError, KeyError, TypeError):
            listed = []
        asked = self.asked_name
        if listed and not any(same_model(asked, name) for name in listed) and self._first("listed"):
            self.other_models.update(listed)
            log.warning("the server%s lists the model %s, not %r (llm.model=%s), and answers anyway: it serves "
                        "another model than the one asked for; kbx records both (job run param llm_model, tag "
                        "kbx.llm_served_model)", s.where(), ", ".join(map(repr, listed)), asked, s.model)  # fmt: skip

    def _first(self, what: str) -> bool:
        with self.warned_lock:
            if what in self.warned:
                return False
            self.warned.add(what)
            return True

    def _describe(self, exc: Exception) -> str:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        while True:  # litellm repeats the class name: "litellm.InternalServerError: InternalServerError: ..."
            shorter = re.sub(r"^(litellm\.)?\w+(Error|Exception): ", "", text)
            if shorter == text:
                break
            text = shorter
        return redact(f"{type(exc).__name__}: {text}"[:500], (self.settings.api_key,))

    def _path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _load(self, key: str) -> dict | None:
        path = self._path(key)
        if not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def _store(self, key: str, entry: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(entry, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)


def _answer_of(response, latency_s: float) -> _Answer:
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    return _Answer(text=choice.message.content or "", prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                   completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                   finish_reason=str(getattr(choice, "finish_reason", "") or ""),
                   served_model=str(getattr(response, "model", "") or ""), latency_s=latency_s)  # fmt: skip


def same_model(asked: str, served: str) -> bool:
    """Whether a served model name is the one asked for: equal, a dated or tagged version of it
    (gpt-4o-mini-2024-07-18, llama3:8b), or the same name under an organisation (org/name)."""
    a, b = asked.strip().lower(), served.strip().lower()
    return a == b or b.startswith((a + "-", a + ":")) or b.endswith("/" + a) or a.endswith("/" + b)


def cache_key(model: str, api_base: str, messages: list[dict], params: dict, sample: int) -> str:
    blob = json.dumps({"v": CACHE_KEY_VERSION, "model": model, "api_base": api_base.rstrip("/"), "messages": messages,
                       "params": params, "sample": sample}, sort_keys=True, ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
