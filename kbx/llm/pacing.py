"""How hard kbx pushes an LLM provider: slots that follow its answers, and the wait before a retry.

A study makes thousands of calls, and a provider pushes back with 429 (rate limited, often with a
Retry-After header) and now and then a 5xx. A call that is told to wait gives up its slot while it
waits, so other tasks' calls keep the provider busy; the wait itself is litellm's
(`litellm.calculate_retry_after`: the server's Retry-After when it gives one, else exponential
backoff with jitter). Persistent pushback shrinks the number of calls in flight, so kbx slows
down instead of hammering; occasional 429s barely move it.
"""

from __future__ import annotations

import contextlib
import threading

from kbx.llm.backend import litellm

RATE_LIMITED = 429


class AdaptiveSlots:
    """At most `limit` holders at once. The limit starts at `ceiling` (llm.concurrency); each
    rate-limited answer takes one slot away (never below one), each success gives one back (never
    above the ceiling). When more calls are refused than succeed, the limit walks down to a single
    call in flight; at 30 % of calls refused once it stays at or near the ceiling."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = self.limit = max(1, ceiling)
        self.held = self.peak = 0
        self.lowest = self.ceiling
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def hold(self):
        with self.changed:
            self.changed.wait_for(lambda: self.held < self.limit)
            self.held += 1
            self.peak = max(self.peak, self.held)
        try:
            yield
        finally:
            with self.changed:
                self.held -= 1
                self.changed.notify()

    def refused(self) -> None:
        with self.changed:
            self.limit = max(1, self.limit - 1)
            self.lowest = min(self.lowest, self.limit)

    def succeeded(self) -> None:
        with self.changed:
            if self.limit < self.ceiling:
                self.limit += 1
                self.changed.notify()


def status_of(exc: Exception) -> int:
    """The HTTP status litellm attached to a provider error; 0 when there is none (no connection)."""
    status = getattr(exc, "status_code", 0)
    return status if isinstance(status, int) else 0


def timed_out(exc: Exception) -> bool:
    """Whether the call ran out of llm.timeout_s. Such a call is not retried: a server does not stop
    writing an answer whose client left (a request without streaming cannot be cancelled), so a retry
    would queue behind the abandoned answer, and a task could wait (retries + 1) x llm.timeout_s for
    what one timeout already said: the server cannot answer this in time."""
    return isinstance(exc, litellm().Timeout)


def retryable(exc: Exception) -> bool:
    """Whether trying again can help: litellm's own rule for an HTTP status (429, 408, 409, 5xx, ...);
    an error without a status (connection refused, timeout) is retried too."""
    status = status_of(exc)
    if not status:
        return True
    litellm()
    from litellm.utils import should_retry

    return bool(should_retry(status))


def retry_wait_s(exc: Exception, tries_so_far: int, retries: int, backoff_s: float) -> float:
    """Seconds to wait before try `tries_so_far + 1`: the server's Retry-After (litellm honours
    values up to a minute), else litellm's exponential backoff, at least backoff_s * 2**tries."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    return float(litellm().calculate_retry_after(remaining_retries=max(0, retries - tries_so_far), max_retries=retries,
                                                  response_headers=headers,
                                                  min_timeout=backoff_s * 2 ** max(0, tries_so_far - 1)))  # fmt: skip
