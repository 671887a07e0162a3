"""Finding the attempt whose GPU work keeps running while every candidate is stopped, and ending it.

A window opens with every process that could use the GPU stopped (kbx.driver.scheduler), and the timer
waits for the work they had queued to drain. Stopping a process stops its launches, not the work it
already queued: a candidate whose thread launches large kernels without ever waiting for them keeps
seconds of work queued, and the window never goes quiet. Its neighbours would be redone until they end
`harness_error`. Instead the driver looks for the process whose work is running (`hunt`):

1. NVML's per-process utilisation over the last part of the wait names the busy processes; their pids,
   matched against every attempt's process tree as the zygote sees it, name the attempt.
2. Where NVML names none of kbx's processes and its pids are not kbx's (a PID namespace the driver does
   not see into), the attempts in flight are ended one at a time, those with evidence first, until the
   GPU goes quiet (elimination).

Ending a process (SIGKILL to its tree) ends its CUDA context, and with it the work the context had
queued. The attempt found is charged `hidden_work` only where the work is surely not a call's: the
candidate runs threads of its own, a process it started ran the work, or its worker was waiting for kbx
with every call synchronised (`evidence`). Otherwise, perhaps a long call in progress, it is first given
as long again to drain, then ended and redone, never charged; so is every attempt ended by elimination
that was not the one. Tests feed `hunt` fake samples, trees and kills (tests/driver/test_hogs.py).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable

from kbx.core.telemetry import ProcessSample

SETTLE_S = 1.0  # of the window's quiet wait (2 s): work honest processes had queued has drained by then
# Quiet waits after ending an attempt: the driver tears its CUDA context down, queued work and all, and a
# context holding GBs and seconds of queued kernels may take longer than one wait to go.
TEARDOWN_WAITS = 2
EVIDENCE_THREADS = 3  # thread names quoted in a charge


@dataclasses.dataclass
class WorkerState:
    """What the driver knows of an attempt's worker that tells its own background work from a call's."""

    threads: tuple[str, ...] = ()  # threads of the candidate's own alive at its last report (Event.THREADS)
    idle: bool = False  # it said CHECKED or PREPARED and has had no command since: every call was synchronised


@dataclasses.dataclass(frozen=True)
class Suspect:
    job: str
    pids: tuple[int, ...]  # its process tree as the zygote sees it, the worker first
    state: WorkerState


@dataclasses.dataclass
class Eviction:
    """An attempt kbx ended while the GPU would not go quiet: charged (`hidden_work`, `reason` its
    reason) or redone (`reason` the harness failure). `decided` is set once the hunt knows which."""

    job: str
    charged: bool = False
    reason: str = ""
    decided: threading.Event = dataclasses.field(default_factory=threading.Event)

    def decide(self, charged: bool, reason: str) -> None:
        self.charged, self.reason = charged, reason
        self.decided.set()


@dataclasses.dataclass(frozen=True)
class Seams:
    """What a hunt does to the world: end an attempt (record its Eviction first, so its own thread finds
    it, then kill its tree), and ask the timer whether the GPU is quiet now (waiting up to its quiet wait)."""

    end: Callable[[Eviction], None]
    quiet: Callable[[], bool]


def busy_pids(samples: Iterable[ProcessSample], since_us: float) -> set[int]:
    """Processes NVML saw running kernels or moving memory at or after `since_us`."""
    return {s.pid for s in samples if s.time_us >= since_us and (s.sm_pct > 0 or s.mem_pct > 0)}


def named(suspects: list[Suspect], busy: set[int], trusted: set[int]) -> tuple[list[Suspect], bool]:
    """(the suspects one of whose processes is busy, whether NVML's pids are the driver's own: a busy pid
    is a trusted process's or a suspect's, so an unmatched busy pid is a process outside kbx)."""
    found = [s for s in suspects if busy & set(s.pids)]
    return found, bool(found) or bool(busy & trusted)


def evidence(suspect: Suspect, busy: set[int]) -> str:
    """Why the work that would not drain is the candidate's own background work, not a call in progress
    ("" when it could be a call's)."""
    if suspect.state.threads:
        return f"it runs threads of its own ({', '.join(suspect.state.threads[:EVIDENCE_THREADS])})"
    children = sorted(busy & set(suspect.pids[1:]))
    if children:
        return f"a process it started (pid {children[0]}) ran the work"
    if suspect.state.idle:
        return "every call it made had been synchronised and it was waiting for kbx"
    return ""


def hunt(suspects: list[Suspect], samples: list[ProcessSample], since_us: float, trusted: set[int],
         seams: Seams) -> tuple[list[Eviction], bool]:  # fmt: skip
    """Called with everyone stopped and the GPU not quiet: (the attempts ended, whether the GPU is quiet now)."""
    busy = busy_pids(samples, since_us)
    found, ours = named(suspects, busy, trusted)
    if found:
        return _end_named(found, busy, seams)
    if ours:  # NVML sees kbx's pids, and the busy ones are none of its attempts': the work is not theirs
        return [], False
    return _eliminate(suspects, busy, seams)


def _end_named(found: list[Suspect], busy: set[int], seams: Seams) -> tuple[list[Eviction], bool]:
    """End the attempts NVML named; one without evidence gets another quiet wait first (a long call ends)."""
    if not any(evidence(s, busy) for s in found) and seams.quiet():
        return [], True
    evictions = []
    for suspect in found:
        proof = evidence(suspect, busy)
        eviction = Eviction(suspect.job)
        seams.end(eviction)
        eviction.decide(bool(proof), charge(proof, "NVML named its process") if proof else redo(
            "NVML named its process, perhaps for a call in progress"))  # fmt: skip
        evictions.append(eviction)
    return evictions, _quiet_after_ending(seams)


def _eliminate(suspects: list[Suspect], busy: set[int], seams: Seams) -> tuple[list[Eviction], bool]:
    """Without NVML's word: another quiet wait (a long call ends), then end the attempts one at a time, those
    with evidence first and the latest started first, until the GPU goes quiet; the last one ended was it."""
    if seams.quiet():
        return [], True
    order = sorted(range(len(suspects)), key=lambda i: (not evidence(suspects[i], busy), -i))
    evictions: list[Eviction] = []
    for i in order:
        eviction = Eviction(suspects[i].job)
        seams.end(eviction)
        evictions.append(eviction)
        if _quiet_after_ending(seams):
            proof = evidence(suspects[i], busy)
            for innocent in evictions[:-1]:
                innocent.decide(False, redo("ended while kbx looked for the attempt whose GPU work would not drain"))
            eviction.decide(bool(proof), charge(proof, "the GPU went quiet when it was ended") if proof else redo(
                "the GPU went quiet when it was ended, perhaps at the end of a call"))  # fmt: skip
            return evictions, True
    for eviction in evictions:
        eviction.decide(False, redo("ended while kbx looked for the work that would not drain, none of it theirs"))
    return evictions, False


def _quiet_after_ending(seams: Seams) -> bool:
    return any(seams.quiet() for _ in range(TEARDOWN_WAITS))


def charge(proof: str, how: str) -> str:
    return (f"its GPU work kept running while every process of it was stopped for another attempt's timing window, "
            f"and kept the GPU from going quiet ({how}); {proof}: it was ended so the others could be timed")


def redo(why: str) -> str:
    return f"kbx ended it because the GPU did not go quiet while it was stopped ({why}); redone, never charged"
