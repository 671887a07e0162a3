"""A spending cap for a whole job: dollars and tokens over every LLM call of every task.

Per-task caps (kbx.methods.llm.Budget) make methods comparable; this one protects the bill. A call
starts only while the job is under both caps; calls already in flight finish (so the job may end
a few calls over), and once a cap is reached the job starts no new proposal and finishes what it
has. A call replayed from the record cache counts with the tokens it was recorded with, at the
current price (kbx.llm.client.LLMClient.cost), so a job killed and rerun stops where one
uninterrupted run would have (and pays nothing twice), and a price set after the answers were
recorded counts for them too.
"""

from __future__ import annotations

import dataclasses
import math
import threading


@dataclasses.dataclass(frozen=True)
class JobCaps:
    """0 means no cap."""

    max_cost_usd: float = 0.0
    max_tokens: int = 0

    @property
    def any(self) -> bool:
        return self.max_cost_usd > 0 or self.max_tokens > 0


class JobBudget:
    """Thread-safe running totals of a job's LLM calls against its caps."""

    def __init__(self, caps: JobCaps) -> None:
        self.caps = caps
        self.cost_usd = 0.0
        self.tokens = 0
        self.calls = 0
        self.priced = 0  # calls whose cost is known
        self.refused = 0  # calls not started because a cap was reached
        self.lock = threading.Lock()

    def admit(self) -> bool:
        """Whether a new call may start; counts the refusal if not."""
        with self.lock:
            if self._reached():
                self.refused += 1
                return False
            return True

    def spend(self, cost_usd: float, tokens: int) -> None:
        with self.lock:
            self.calls += 1
            self.tokens += tokens
            if not math.isnan(cost_usd):
                self.cost_usd += cost_usd
                self.priced += 1

    def reached(self) -> str:
        """Why no new call may start ("" while under every cap)."""
        with self.lock:
            return self._reached()

    def _reached(self) -> str:
        c = self.caps
        if c.max_cost_usd > 0 and self.cost_usd >= c.max_cost_usd:
            return f"the job's LLM budget was reached (${self.cost_usd:.4f} of budget.max_cost_usd=${c.max_cost_usd:g})"
        if c.max_tokens > 0 and self.tokens >= c.max_tokens:
            return f"the job's LLM budget was reached ({self.tokens} tokens of budget.max_total_tokens={c.max_tokens})"
        return ""

    def progress(self) -> str:
        """For the progress line: spend so far, against the caps when there are any (no dollars
        while no call's price is known)."""
        with self.lock:
            cost = f"${self.cost_usd:.4f}" + (f"/{self.caps.max_cost_usd:g}" if self.caps.max_cost_usd > 0 else "")
            tokens = f"{self.tokens} tok" + (f"/{self.caps.max_tokens}" if self.caps.max_tokens > 0 else "")
            return f"{cost} {tokens}" if self.priced else tokens

    def totals(self) -> dict[str, float]:
        """How far the job got, for the summary and MLflow."""
        with self.lock:
            return {"budget_reached": float(bool(self._reached())), "budget_cost_usd": self.cost_usd,
                    "budget_tokens": float(self.tokens), "budget_refused_calls": float(self.refused)}  # fmt: skip
