"""Evaluation on a Ray cluster: one actor per GPU (per CPU on `hardware=cpu`), each holding an Evaluator.

Each actor builds its own Evaluator on its node, so candidate code runs exactly as it does locally:
in workers forked by that Evaluator's zygote, never in the actor, the driver or any reused process.
The driver only sends (task id, code, label, expert) and gets an EvalRecord back: a TaskInfo holds functions
loaded from task files by path, which need not pickle, so each actor resolves task ids from its own
registry, checked at start to hold the same tasks at the same versions as the driver's.

One run, one set of seeds: the driver draws the secret and ghost seeds and hands them to every
actor, so every task is judged on the same inputs wherever it runs.

As in the local pool (kbx.driver.pool), attempts start longest first (kbx.driver.costs, kept by the
driver per GPU model), and the actors of one node share its CPUs evenly (`EvalSettings.host_share`).

Failover: an actor that dies mid-attempt (its process killed, its node lost) is marked dead and the
attempt goes to a live actor, so the run neither loses nor duplicates a record (the dead actor's
verdict, if it had one, never arrived). When no actor is left, the attempt fails with RayPoolError.

`ray` is imported only when a pool is built: the GPU machine image has none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kbx.contract.attempt import Attempt
from kbx.core.errors import ConfigError
from kbx.core.record import EvalRecord
from kbx.driver.costs import AttemptCosts
from kbx.driver.evaluator import SECRET_SEED_BITS, EvalSettings, Evaluator, evaluate_all

log = logging.getLogger("kbx")

ADMIN_THREADS = 2  # actor threads beyond `workers`, so in_flight/dump_stacks answer while all slots judge
START_TIMEOUT_S = 300.0  # for every actor to start (a GPU node may first have to join the cluster)
ADMIN_TIMEOUT_S = 30.0  # for an actor to answer in_flight, dump_stacks or close
CONNECT_TIMEOUT_S = 10.0  # for the cluster's address to accept a connection
SUITE_DIFFS_SHOWN = 5


class RayClusterError(ConfigError):
    """The Ray cluster cannot host the pool as configured (unreachable, too small, other GPUs or tasks):
    reported like any configuration error, as one line."""


class RayPoolError(RuntimeError):
    """Every actor of the pool has died: no attempt can be judged any more."""


@dataclasses.dataclass(frozen=True)
class RaySettings:
    """Where and how wide the pool is (`eval.ray_*` in conf/config.yaml)."""

    address: str = "auto"  # "auto": the cluster this node belongs to; "local": a new one here; or an address
    actors: int = 0  # 0: one per GPU of the cluster (per CPU with device "cpu")
    expect_gpu: str = ""  # every actor's GPU name must hold this (the hardware profile's nvml_match)


class EvaluatorActor:
    """Runs inside a Ray worker process: one Evaluator on the GPU Ray gave this actor, or the CPU."""

    def __init__(self, settings: EvalSettings, secret_seed: int | None, ghost_seed: int) -> None:
        import ray

        from kbx.tasks.registry import discover

        if settings.on_gpu:  # Ray sets CUDA_VISIBLE_DEVICES to the GPU it reserved; NVML wants that index
            settings = dataclasses.replace(settings, gpu_index=int(ray.get_gpu_ids()[0]))
        settings = dataclasses.replace(settings, host_share=actors_per_node(ray, settings.on_gpu))
        self.ev = Evaluator(settings)
        self.ev.secret_seed, self.ev.ghost_seed = secret_seed, ghost_seed
        self.ev.start()  # an actor exists to judge: its processes start while the driver gets ready
        self.tasks = discover(self.ev.tasks_dir)
        self.judged = 0
        self.lock = threading.Lock()

    def describe(self) -> dict:
        """Where this actor runs and what it judges with, for the driver's start-up checks."""
        from kbx.core.hardware import detect_gpus

        s = self.ev.settings
        gpus = detect_gpus() if s.on_gpu else []
        return {"host": socket.gethostname(), "pid": os.getpid(), "workdir": str(self.ev.workdir),
                "gpu_index": s.gpu_index, "gpu_name": gpus[s.gpu_index] if len(gpus) > s.gpu_index else "",
                "secret_seed": self.ev.secret_seed, "ghost_seed": self.ev.ghost_seed, "judged": self.judged,
                "host_share": s.host_share,
                "tasks": {task_id: t.spec.version for task_id, t in self.tasks.items()}}  # fmt: skip

    def evaluate(self, task_id: str, code: str, label: str, expert: bool = False) -> EvalRecord:
        record = self.ev.evaluate_one(Attempt(self.tasks[task_id], code, label, expert))
        with self.lock:
            self.judged += 1
        return record

    def in_flight(self) -> list[tuple[str, str, float]]:
        return self.ev.in_flight()

    def progress(self) -> str:
        return self.ev.progress()

    def dump_stacks(self) -> str:
        return self.ev.dump_stacks()

    def close(self) -> None:
        self.ev.close()


def actors_per_node(ray, on_gpu: bool) -> int:
    """How many pool actors can share this actor's node: one per GPU of it (per CPU on the CPU), as
    the pool places them by default. Each Evaluator sizes its processes' CPU threads by it, so two
    actors of a 2-GPU node do not each take every core (kbx.driver.evaluator.cpu_threads_per_process)."""
    node = ray.get_runtime_context().get_node_id()
    resources = next((n["Resources"] for n in ray.nodes() if n["NodeID"] == node), {})
    return max(1, int(resources.get("GPU" if on_gpu else "CPU", 1)))


@dataclasses.dataclass
class _Member:
    index: int
    handle: Any  # ray.actor.ActorHandle
    info: dict
    alive: bool = True
    holding: list[str] = dataclasses.field(default_factory=list)  # labels of the attempts it judges now

    @property
    def name(self) -> str:
        gpu = f" gpu {self.info['gpu_index']}" if self.info.get("gpu_name") else ""
        return f"ray actor {self.index} ({self.info['host']}{gpu}, pid {self.info['pid']})"


class RayEvaluatorPool:
    """The Evaluator interface (evaluate, evaluate_one, in_flight, dump_stacks, close, settings,
    secret_seed) over Ray actors. Each admits `settings.workers` attempts at a time; an attempt goes
    to the live actor with the fewest in flight, and waits while every live actor is full."""

    def __init__(self, settings: EvalSettings, ray_settings: RaySettings = RaySettings()) -> None:
        ray = _ray()
        self.settings = settings
        self.ray_settings = ray_settings
        self.members: list[_Member] = []
        self.costs: AttemptCosts | None = None  # longest first, once the actors have said which GPU they judge on
        self.failovers: list[tuple[str, int]] = []  # (label, dead actor's index) for every re-dispatch
        self.cond = threading.Condition()
        self.owns_ray = not ray.is_initialized()  # a pool that started Ray stops it; one that joined does not
        if self.owns_ray:
            _connect(ray, ray_settings.address)
        rng = random.SystemRandom()
        self.secret_seed = rng.getrandbits(SECRET_SEED_BITS) if settings.secret_seed else None
        self.ghost_seed = rng.getrandbits(SECRET_SEED_BITS)
        try:
            self._start(ray)
        except BaseException:
            self.close()
            raise

    def _start(self, ray) -> None:
        s, rs = self.settings, self.ray_settings
        resource = "GPU" if s.on_gpu else "CPU"
        available = int(ray.cluster_resources().get(resource, 0))
        count = rs.actors or available
        if count < 1:
            raise RayClusterError(f"the Ray cluster has no {resource}s for eval.backend=ray "
                                  f"({ray.cluster_resources()})")  # fmt: skip
        per_actor = {"num_gpus": 1} if s.on_gpu else {"num_cpus": 1}
        actor_class = ray.remote(EvaluatorActor).options(max_restarts=0, max_task_retries=0,
                                                         max_concurrency=s.workers + ADMIN_THREADS, **per_actor)  # fmt: skip
        handles = [actor_class.remote(s, self.secret_seed, self.ghost_seed) for _ in range(count)]
        self.members = [_Member(i, h, {"host": "?", "pid": 0}) for i, h in enumerate(handles)]
        try:
            infos = ray.get([h.describe.remote() for h in handles], timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise RayClusterError(f"{count} Ray actors with 1 {resource} each did not all start within "
                                  f"{START_TIMEOUT_S:.0f} s; the cluster has {available} {resource}s "
                                  "(lower eval.ray_actors, or add nodes)") from None  # fmt: skip
        except ray.exceptions.RayError as exc:
            raise RayClusterError(f"a Ray actor of the evaluation pool failed to start: {exc}") from exc
        for member, info in zip(self.members, infos, strict=True):
            member.info = info
        self._check_suite()
        self._check_gpus()
        self.costs = AttemptCosts(self.gpu_name or ("cuda" if s.on_gpu else "cpu"))
        log.info("Ray evaluation pool: %s", "; ".join(m.name for m in self.members))

    def _check_suite(self) -> None:
        """Every actor resolves task ids itself, so each must hold the driver's tasks at the driver's versions."""
        from kbx.tasks.registry import discover

        ours = {task_id: t.spec.version for task_id, t in discover(self.settings.tasks_dir or None).items()}
        for m in self.members:
            theirs = m.info["tasks"]
            diffs = [f"{t} (driver v{ours.get(t, '-')}, actor v{theirs.get(t, '-')})"
                     for t in sorted(ours.keys() | theirs.keys()) if ours.get(t) != theirs.get(t)]  # fmt: skip
            if diffs:
                raise RayClusterError(f"{m.name} holds other tasks than the driver: {', '.join(diffs[:SUITE_DIFFS_SHOWN])}"
                                      f"{' ...' if len(diffs) > SUITE_DIFFS_SHOWN else ''}; install the same kbx "
                                      "and tasks on every node")  # fmt: skip

    def _check_gpus(self) -> None:
        """One run's results carry one GPU label: every actor's GPU is one model, the one asked for."""
        if not self.settings.on_gpu:
            return
        names = {m.info["gpu_name"] for m in self.members}
        if len(names) > 1:
            raise RayClusterError(f"the Ray actors got different GPU models ({', '.join(sorted(names))}); "
                                  "run each model separately")  # fmt: skip
        name = names.pop()
        expect = self.ray_settings.expect_gpu
        if expect and expect.lower() not in name.lower():
            raise RayClusterError(f"the Ray actors' GPU is {name!r}, not a {expect!r}; name the matching hardware "
                                  "profile, or hardware.force=true to label results as requested anyway")  # fmt: skip

    @property
    def gpu_name(self) -> str:
        """The GPU model every actor judges on ("" on the CPU)."""
        return self.members[0].info.get("gpu_name", "") if self.members else ""

    def start(self) -> None:
        """Nothing to do: each actor started its Evaluator's processes when it was made."""

    def __enter__(self) -> RayEvaluatorPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every live actor's Evaluator (its workers and directory), end the actors, and stop
        Ray if this pool started it."""
        ray = _ray()
        for m in self.members:
            if m.alive:
                with contextlib.suppress(ray.exceptions.RayError):
                    ray.get(m.handle.close.remote(), timeout=ADMIN_TIMEOUT_S)
            with contextlib.suppress(Exception):
                ray.kill(m.handle)
            m.alive = False
        if self.owns_ray and ray.is_initialized():
            ray.shutdown()
            self.owns_ray = False

    def evaluate(
        self, attempts: Sequence[Attempt], on_record: Callable[[int, EvalRecord], None] | None = None
    ) -> list[EvalRecord]:
        """Judge attempts concurrently over every actor, longest first; records come back in input order."""
        return evaluate_all(self.evaluate_one, attempts, self.settings.workers * len(self.members), on_record,
                            self.costs)  # fmt: skip

    def evaluate_one(self, attempt: Attempt) -> EvalRecord:
        """Judge on a live actor; if that actor dies first, on another, until one answers or none is left."""
        ray = _ray()
        lost = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError, ray.exceptions.NodeDiedError)
        while True:
            member = self._acquire(attempt)
            try:
                remote = member.handle.evaluate.remote
                return ray.get(remote(attempt.task.id, attempt.code, attempt.label, attempt.expert))
            except lost as exc:
                self._lost(member, attempt, exc)
            finally:
                self._release(member, attempt)

    def _acquire(self, attempt: Attempt) -> _Member:
        with self.cond:
            while True:
                live = [m for m in self.members if m.alive]
                if not live:
                    raise RayPoolError(f"every Ray actor of the evaluation pool has died ({len(self.members)} started); "
                                       f"{attempt.task.id} [{attempt.label}] cannot be judged")  # fmt: skip
                free = [m for m in live if len(m.holding) < self.settings.workers]
                if free:
                    member = min(free, key=lambda m: (len(m.holding), m.index))
                    member.holding.append(attempt.label)
                    return member
                self.cond.wait()

    def _release(self, member: _Member, attempt: Attempt) -> None:
        with self.cond:
            member.holding.remove(attempt.label)
            self.cond.notify_all()

    def _lost(self, member: _Member, attempt: Attempt, exc: BaseException) -> None:
        """Mark the actor dead (and make sure it is: an unreachable one may still be running) and
        record the re-dispatch; the caller's loop sends the attempt elsewhere."""
        with self.cond:
            first = member.alive
            member.alive = False
            self.failovers.append((attempt.label, member.index))
            self.cond.notify_all()
        if first:
            log.warning("%s is lost (%s); its attempts go to the other actors", member.name, type(exc).__name__)
            with contextlib.suppress(Exception):
                _ray().kill(member.handle)
        log.warning("re-dispatching %s [%s] after %s was lost", attempt.task.id, attempt.label, member.name)

    def in_flight(self) -> list[tuple[str, str, float]]:
        ray = _ray()
        rows = []
        for m in [m for m in self.members if m.alive]:
            try:
                rows += [(f"{task} [{m.name}]", phase, secs)
                         for task, phase, secs in ray.get(m.handle.in_flight.remote(), timeout=ADMIN_TIMEOUT_S)]  # fmt: skip
            except ray.exceptions.RayError as exc:
                rows.append((f"[{m.name}]", f"no answer ({type(exc).__name__})", 0.0))
        return rows

    def progress(self) -> str:
        ray = _ray()
        parts = []
        for m in [m for m in self.members if m.alive]:
            try:
                parts.append(f"{m.name}: {ray.get(m.handle.progress.remote(), timeout=ADMIN_TIMEOUT_S)}")
            except ray.exceptions.RayError as exc:
                parts.append(f"{m.name}: no answer ({type(exc).__name__})")
        return "; ".join(parts)

    def dump_stacks(self) -> str:
        ray = _ray()
        parts = []
        for m in self.members:
            if not m.alive:
                parts.append(f"=== {m.name} ===\n(dead)")
                continue
            try:
                parts.append(f"=== {m.name} ===\n{ray.get(m.handle.dump_stacks.remote(), timeout=ADMIN_TIMEOUT_S)}")
            except ray.exceptions.RayError as exc:
                parts.append(f"=== {m.name} ===\n(no answer: {exc})")
        return "\n".join(parts)


def _connect(ray, address: str) -> None:
    """Join the cluster at `address` ("auto": the one this node belongs to) or, for "local", start one here."""
    _check_reachable(address)
    try:
        if address == "local":
            ray.init(address="local", include_dashboard=False)
        else:
            ray.init(address=address)
    except ConnectionError as exc:
        raise RayClusterError(f"no Ray cluster at eval.ray_address={address}: {exc} (start one with `ray start "
                              "--head`, or use eval.ray_address=local)") from exc  # fmt: skip


def _check_reachable(address: str) -> None:
    """ray.init keeps retrying for minutes where nothing listens at HOST:PORT; fail at once instead."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # auto, local, or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise RayClusterError(f"no Ray cluster at eval.ray_address={address}: {exc}") from exc


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise RayClusterError("eval.backend=ray needs Ray: pip install -e '.[cluster]'") from exc
    return ray
