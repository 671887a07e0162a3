"""One chat-completion client over litellm: bounded concurrency, retries, a content-keyed cache.

Cache modes (`llm.cache`):
  off     every call goes to the provider; nothing is stored.
  record  every call goes to the provider; the response is stored (overwriting).
  replay  responses come from the store only; a miss is an error (no network at all).
  auto    stored responses are reused; misses go to the provider and are stored.
A cache key hashes the model, the messages, the sampling parameters and the sample index, so
N samples of one prompt are N entries and a rerun gets the same N texts back, bit for bit.
The API key is never part of a key, a stored entry, a log line or an error message.

Retries and pacing are kbx.llm.pacing's (Retry-After honoured, slots that shrink under persistent
rate limiting); the job-wide spending cap is kbx.llm.budget's.
"""

from __future__ import annotations

import dataclasses
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
from kbx.llm.pacing import RATE_LIMITED, AdaptiveSlots, retry_wait_s, retryable, status_of

log = logging.getLogger(__name__)


CACHE_MODES = ("off", "record", "replay", "auto")
PREFLIGHT_MESSAGES = [{"role": "user", "content": "Reply with the word ok."}]


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
    retries: int = 2  # extra tries after a failed call (other than a rate limit)
    rate_limit_retries: int = 8  # extra tries after HTTP 429, each after the server's Retry-After
    backoff_s: float = 2.0  # least wait before retry i: backoff_s * 2**i (else litellm's backoff)
    price_in_usd_per_mtok: float = 0.0  # 0: litellm's price list (a local model has none)
    price_out_usd_per_mtok: float = 0.0
    timeout_s: float = 600.0
    cache: str = "auto"
    cache_dir: str = ".kbx_cache/llm"

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise LLMError(f"llm.cache must be one of {', '.join(CACHE_MODES)}, got {self.cache!r}")
        if not self.model:
            raise LLMError("llm.model is not set (any litellm model string, e.g. openai/<name> with llm.api_base)")
        if self.concurrency < 1:
            raise LLMError(f"llm.concurrency must be a positive integer, got {self.concurrency!r}")


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
    cost_usd: float = math.nan  # NaN: litellm does not know this model's price
    latency_s: float = 0.0  # 0 for a cache hit
    cached: bool = False
    error: str = ""
    key: str = ""
    model: str = ""
    temperature: float = math.nan
    max_tokens: int = 0
    started_s: float = 0.0
    tries: tuple[Try, ...] = ()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLMClient:
    """Thread-safe: any number of threads may call `complete`; at most `concurrency` reach the provider."""

    def __init__(self, settings: LLMSettings, budget: JobBudget | None = None) -> None:
        self.settings = settings
        self.slots = AdaptiveSlots(settings.concurrency)
        self.budget = budget or JobBudget(JobCaps())
        self.cache_dir = Path(settings.cache_dir)

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
        key = cache_key(s.model, messages, params, sample)
        frozen = tuple(dict(m) for m in messages)
        traced = {"model": s.model, **params, "started_s": time.time()}
        if not self.budget.admit():
            raise BudgetReached(self.budget.reached())
        if s.cache in ("replay", "auto"):
            hit = self._load(key)
            if hit is not None:
                self.budget.spend(_nan(hit.get("cost_usd")), hit["prompt_tokens"] + hit["completion_tokens"])
                return Call(role, sample, frozen, hit["text"], hit["prompt_tokens"], hit["completion_tokens"],
                            _nan(hit.get("cost_usd")), 0.0, True, "", key, **traced)  # fmt: skip
            if s.cache == "replay":
                raise LLMError(f"llm.cache=replay: no stored response for this prompt (key {key[:16]}) "
                               f"in {self.cache_dir}; record it first with llm.cache=record or auto")  # fmt: skip
        made: list[Try] = []
        text, usage, cost, error, latency = self._call_with_retries(messages, params, made)
        call = Call(role, sample, frozen, text, usage[0], usage[1], cost, latency, False, error, key, **traced,
                    tries=tuple(made))  # fmt: skip
        if not error and s.cache in ("record", "auto"):
            self._store(key, {"model": s.model, "params": params, "sample": sample, "messages": messages,
                              "text": text, "prompt_tokens": usage[0], "completion_tokens": usage[1],
                              "cost_usd": None if math.isnan(cost) else cost})  # fmt: skip
        return call

    def preflight(self) -> None:
        """A one-token call, so a missing key or an unreachable endpoint fails before any task starts."""
        if self.settings.cache == "replay":
            return
        s = self.settings
        try:
            self._litellm_call(PREFLIGHT_MESSAGES, {"temperature": 0.0, "max_tokens": 1}, num_retries=0)
        except Exception as exc:  # noqa: BLE001 - every provider error becomes one line
            where = f" at {s.api_base}" if s.api_base else ""
            raise LLMError(f"LLM preflight failed for model {s.model!r}{where}: {self._describe(exc)}") from None

    def priced(self) -> bool:
        """Whether a call's cost is known: llm.price_*_usd_per_mtok set, or the model in litellm's price list."""
        s = self.settings
        if s.price_in_usd_per_mtok or s.price_out_usd_per_mtok:
            return True
        try:
            litellm().cost_per_token(model=s.model, prompt_tokens=1, completion_tokens=1)
            return True
        except Exception:  # noqa: BLE001 - litellm raises for a model it has no price for
            return False

    # -- internals ----------------------------------------------------------------------------

    def _call_with_retries(self, messages: list[dict], params: dict,
                           made: list[Try]) -> tuple[str, tuple[int, int], float, str, float]:  # fmt: skip
        """(text, (prompt, completion) tokens, cost, error, latency): latency is the time spent at the
        provider over all tries, not the wait for a slot or before a retry. Rate limits and other
        failures have their own retry counts; a wait before a retry holds no slot. Each request made
        is appended to `made`."""
        s = self.settings
        latency = 0.0
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
                        took = time.perf_counter() - started
                        latency += took
                        made.append(Try(started_s, took, failure))
                    text = response.choices[0].message.content or ""
                    usage = getattr(response, "usage", None)
                    tokens = (int(getattr(usage, "prompt_tokens", 0) or 0),
                              int(getattr(usage, "completion_tokens", 0) or 0))  # fmt: skip
                    cost = self._cost(response, tokens)
                    self.budget.spend(cost, sum(tokens))
                self.slots.succeeded()
                return text, tokens, cost, "", latency
            except BudgetReached:
                raise
            except Exception as exc:  # noqa: BLE001 - a provider error must not stop the run
                error = self._describe(exc)
                limited = status_of(exc) == RATE_LIMITED
                if limited:
                    self.slots.refused()
                allowed = s.rate_limit_retries if limited else s.retries
                tries[limited] += 1
                if tries[limited] > allowed or not retryable(exc):
                    log.warning("LLM call failed for good (%d tries): %s", sum(tries.values()), error)
                    return "", (0, 0), math.nan, error, latency
                wait = retry_wait_s(exc, tries[limited], allowed, s.backoff_s)
                log.warning("LLM call failed (try %d of %d), retrying in %.1f s: %s", tries[limited], allowed + 1,
                            wait, error)  # fmt: skip
                time.sleep(wait)

    def _litellm_call(self, messages: list[dict], params: dict, num_retries: int):
        s = self.settings
        kwargs = {"model": s.model, "messages": messages, "timeout": s.timeout_s, "num_retries": num_retries, **params}
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if s.api_key:
            kwargs["api_key"] = s.api_key
        return litellm().completion(**kwargs)

    def _cost(self, response, tokens: tuple[int, int]) -> float:
        """Dollars for one completion: llm.price_*_usd_per_mtok when set, else litellm's price list."""
        s = self.settings
        if s.price_in_usd_per_mtok or s.price_out_usd_per_mtok:
            return (tokens[0] * s.price_in_usd_per_mtok + tokens[1] * s.price_out_usd_per_mtok) / TOKENS_PER_MTOK
        try:
            cost = litellm().completion_cost(completion_response=response)
            return float(cost) if cost else math.nan
        except Exception:  # noqa: BLE001 - unknown price: not measured, not zero
            return math.nan

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


def cache_key(model: str, messages: list[dict], params: dict, sample: int) -> str:
    blob = json.dumps({"model": model, "messages": messages, "params": params, "sample": sample},
                      sort_keys=True, ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _nan(value) -> float:
    return math.nan if value is None else float(value)
