"""Several GPUs of one host: one Evaluator per GPU, attempts spread over them.

Each member owns its GPU outright: its own zygote, judges, timer and GPU scheduler, with
CUDA_VISIBLE_DEVICES set to that GPU alone. So two timings never share a GPU, and every speedup
is against a baseline timed on the GPU that timed the kernel. An attempt goes to the member with
the fewest attempts in flight, so a GPU slowed by long checks takes fewer of them; each member
admits `EvalSettings.workers` attempts at a time.

`open_evaluator` is what callers use: a plain Evaluator for one device, a pool for several, or
a pool of Ray actors (kbx.driver.ray_pool) when Ray settings are given.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence

from kbx.contract.attempt import Attempt
from kbx.core.record import EvalRecord
from kbx.driver.evaluator import EvalSettings, Evaluator, evaluate_all
from kbx.driver.ray_pool import RayEvaluatorPool, RaySettings  # imports ray only when a pool is built


class EvaluatorPool:
    """The Evaluator interface (evaluate, evaluate_one, in_flight, judge_startups, dump_stacks, close)
    over one member per GPU index."""

    def __init__(self, settings: EvalSettings, gpu_indices: Sequence[int],
                 make: Callable[[EvalSettings], Evaluator] = Evaluator) -> None:  # fmt: skip
        if not gpu_indices:
            raise ValueError("an evaluator pool needs at least one GPU index")
        self.settings = settings
        self.gpu_indices = tuple(gpu_indices)
        self.members: list[Evaluator] = []
        try:
            for index in self.gpu_indices:
                self.members.append(make(dataclasses.replace(settings, gpu_index=index,
                                                             host_share=len(self.gpu_indices))))  # fmt: skip
        except BaseException:
            self.close()
            raise
        for member in self.members[1:]:  # one run, one secret seed: every task judged on the same inputs
            member.secret_seed, member.ghost_seed = self.members[0].secret_seed, self.members[0].ghost_seed
        self.secret_seed = self.members[0].secret_seed
        self.loads = [0] * len(self.members)
        self.lock = threading.Lock()

    def start(self) -> None:
        for member in self.members:
            member.start()

    def __enter__(self) -> EvaluatorPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for member in self.members:
            member.close()

    def evaluate(
        self, attempts: Sequence[Attempt], on_record: Callable[[int, EvalRecord], None] | None = None
    ) -> list[EvalRecord]:
        """Judge attempts concurrently over every GPU; records come back in input order."""
        return evaluate_all(self.evaluate_one, attempts, self.settings.workers * len(self.members), on_record,
                            self.costs)  # fmt: skip

    @property
    def costs(self):
        """One device model per pool (hardware.gpus), so one set of costs."""
        return self.members[0].costs

    def evaluate_one(self, attempt: Attempt) -> EvalRecord:
        with self.lock:
            k = min(range(len(self.members)), key=lambda i: (self.loads[i], i))
            self.loads[k] += 1
        try:
            return self.members[k].evaluate_one(attempt)
        finally:
            with self.lock:
                self.loads[k] -= 1

    def judge_startups(self) -> list[dict[str, float]]:
        return [startup for member in self.members for startup in member.judge_startups()]

    def in_flight(self) -> list[tuple[str, str, float]]:
        return [(f"{task} [gpu {index}]", phase, secs)
                for index, member in zip(self.gpu_indices, self.members, strict=True)
                for task, phase, secs in member.in_flight()]  # fmt: skip

    def progress(self) -> str:
        return "; ".join(f"gpu {index}: {member.progress()}"
                         for index, member in zip(self.gpu_indices, self.members, strict=True))  # fmt: skip

    def dump_stacks(self) -> str:
        return "\n".join(f"=== gpu {index} ===\n{member.dump_stacks()}"
                         for index, member in zip(self.gpu_indices, self.members, strict=True))  # fmt: skip


def open_evaluator(
    settings: EvalSettings, gpu_indices: Sequence[int] = (), ray: RaySettings | None = None
) -> Evaluator | EvaluatorPool | RayEvaluatorPool:
    """An Evaluator for one device (the CPU, or `settings.gpu_index`), a pool for several GPUs of this
    host, or with `ray` a RayEvaluatorPool (Ray assigns the GPUs, so `gpu_indices` is not used)."""
    if ray is not None:
        return RayEvaluatorPool(settings, ray)
    if settings.on_gpu and len(gpu_indices) > 1:
        return EvaluatorPool(settings, gpu_indices)
    if settings.on_gpu and gpu_indices:
        settings = dataclasses.replace(settings, gpu_index=gpu_indices[0])
    return Evaluator(settings)
