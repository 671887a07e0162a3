"""How one evaluator is set up: device, workers, seeds, time limits, timing policy, sandbox."""

from __future__ import annotations

import dataclasses

from kbx.contract import timing_policy
from kbx.protocol import SANDBOX_NAMESPACES

JUDGES_GPU = 4  # judge processes on a GPU machine, at least: one per two attempts in flight beyond that


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    device: str = "cpu"  # "cpu" (Triton interpreter) or "cuda"
    gpu_index: int = 0
    public_seeds: tuple[int, ...] = (0,)
    secret_seed: bool = True  # add one seed drawn per run, so no kernel can be tuned to known inputs
    workers: int = 2
    check_timeout_s: float = 300.0
    time_timeout_s: float = 300.0
    judge_timeout_s: float = 600.0
    judges: int = 0  # judge processes; 0: JUDGES_GPU on a GPU, 1 on a CPU (where memory is the limit)
    check_perf_shape: bool | None = None  # default: on a GPU only (too slow for the interpreter)
    memory_limit_gb: float = 8.0  # address-space cap for CPU workers (not applicable with CUDA)
    min_free_gpu_gb: float = 8.0  # a new check starts only with this much device memory free (or none in flight)
    timing: timing_policy.TimingPolicy = dataclasses.field(default_factory=timing_policy.TimingPolicy)
    tasks_dir: str = ""
    keep_jobs: bool = False
    sandbox: str = SANDBOX_NAMESPACES  # kbx.protocol.SANDBOX_MODES: or SANDBOX_NONE to run candidates without it
    host_share: int = 1  # evaluators sharing this host's CPUs (an EvaluatorPool: one per GPU)

    @property
    def on_gpu(self) -> bool:
        return self.device == "cuda"

    @property
    def judge_count(self) -> int:
        """Judge processes per device: `judges`, or the default above (kbx.bench eval reports it)."""
        return self.judges or (max(JUDGES_GPU, self.workers // 2) if self.on_gpu else 1)
