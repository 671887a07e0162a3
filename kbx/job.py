"""One Hydra job: resolve hardware, select tasks, build the method, evaluate, track, summarise.

Everything that can be wrong with the configuration is checked in `Job.prepare`, before any
worker starts or any run is created.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import platform
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import kbx
from kbx import hardware as hw
from kbx.errors import ConfigError
from kbx.eval.evaluator import EvalSettings, Evaluator
from kbx.loop import run_suite
from kbx.summary import summarize, table
from kbx.tasks.registry import discover, select
from kbx.tasks.spec import TaskInfo

log = logging.getLogger("kbx")


@dataclasses.dataclass
class Job:
    cfg: DictConfig
    root: Path
    hardware: hw.Hardware
    tasks: list[TaskInfo]
    all_tasks: dict[str, TaskInfo]
    method: object

    @classmethod
    def prepare(cls, cfg: DictConfig, root: Path) -> Job:
        rounds = cfg.iteration.rounds
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise ConfigError(f"iteration.rounds must be a positive integer, got {rounds!r}")
        for key in ("workers",):
            if not isinstance(cfg.eval[key], int) or cfg.eval[key] < 1:
                raise ConfigError(f"eval.{key} must be a positive integer, got {cfg.eval[key]!r}")
        hardware = hw.resolve(hw.from_config(cfg.hardware), hw.load_profiles(), force=bool(cfg.hardware.get("force")))
        all_tasks = discover()
        ids = [cfg.task] if isinstance(cfg.task, str) else list(cfg.task or [])
        tasks = select(all_tasks, ids, cfg.category.name)
        if not tasks:
            raise ConfigError(f"no tasks selected (category={cfg.category.name}, task={ids})")
        method = build_method(cfg.method, root)
        if hasattr(method, "report_unknown"):
            for line in method.report_unknown(set(all_tasks)):
                log.warning(line)
        return cls(cfg, root, hardware, tasks, all_tasks, method)

    def run(self) -> dict[str, float]:
        from kbx.tracking import Tracker

        cfg = self.cfg
        tracker = Tracker(cfg.tracking_uri, cfg.experiment, self.root)
        parent = tracker.start_parent(self.run_name(), self.params(), {"kbx.method": cfg.method.name})
        log.info("MLflow run %s in %s", parent, tracker.uri)
        status = "FAILED"
        try:
            with Evaluator(self.eval_settings()) as evaluator, _Progress() as progress:
                results = run_suite(self.method, self.tasks, evaluator, cfg.iteration.rounds,
                                    on_round_start=progress.start, on_record=progress.update)  # fmt: skip
                seeds = {"public_seeds": ",".join(map(str, evaluator.settings.public_seeds)),
                         "secret_seed": evaluator.secret_seed if evaluator.secret_seed is not None else "none"}  # fmt: skip
            tracker.log_params(parent, seeds)  # revealed only once every attempt is judged
            for result in results:
                tracker.log_task(parent, result, cfg.method.name, self.hardware)
            summary = summarize(results)
            text = table(results)
            records = "\n".join(_record_line(j.round, j.record) for r in results for j in r.judged)
            tracker.finish_parent(parent, summary, {"config.yaml": OmegaConf.to_yaml(cfg, resolve=True),
                                                    "records.jsonl": records + "\n", "summary.txt": text + "\n"})  # fmt: skip
            status = "FINISHED"
            print(text)
            return summary
        finally:
            if status != "FINISHED":
                tracker.client.set_terminated(parent, "FAILED")

    def eval_settings(self) -> EvalSettings:
        e = self.cfg.eval
        return EvalSettings(
            device=self.hardware.device,
            gpu_index=self.hardware.gpu_index,
            public_seeds=tuple(int(s) for s in e.public_seeds),
            secret_seed=bool(e.secret_seed),
            workers=int(e.workers),
            check_timeout_s=float(e.check_timeout_s),
            time_timeout_s=float(e.time_timeout_s),
            memory_limit_gb=float(e.memory_limit_gb),
            keep_jobs=bool(e.keep_jobs),
        )

    def run_name(self) -> str:
        return f"{self.cfg.method.name}-{self.cfg.category.name}-{self.hardware.name}"

    def params(self) -> dict:
        import torch
        import triton

        cfg = self.cfg
        resolved = OmegaConf.to_yaml(cfg, resolve=True)
        return {
            "method": cfg.method.name,
            "category": cfg.category.name,
            "hardware": self.hardware.name,
            "gpu_name": self.hardware.gpu_name or "none",
            "device": self.hardware.device,
            "iteration": cfg.iteration.rounds,
            "n_tasks": len(self.tasks),
            "tasks": ",".join(t.id for t in self.tasks)[:6000],
            "config_hash": hashlib.sha256(resolved.encode()).hexdigest()[:12],
            "kbx_version": kbx.__version__,
            "suite_version": suite_version(self.all_tasks),
            "torch_version": torch.__version__,
            "triton_version": triton.__version__,
            "python_version": platform.python_version(),
        }


def build_method(method_cfg: DictConfig, root: Path):
    """Call the method's builder (its `_target_`) with the remaining keys; relative paths from `root`."""
    from hydra.utils import get_method

    kwargs = {k: v for k, v in OmegaConf.to_container(method_cfg, resolve=True).items() if k != "_target_"}
    if isinstance(kwargs.get("path"), str) and kwargs["path"] and not Path(kwargs["path"]).is_absolute():
        kwargs["path"] = str(root / kwargs["path"])
    return get_method(method_cfg._target_)(**kwargs)


def suite_version(tasks: dict[str, TaskInfo]) -> str:
    """A short hash of every task id and version: runs with equal suite_version judged the same tasks."""
    text = "\n".join(f"{t.id}@{t.spec.version}" for t in tasks.values())
    return f"{len(tasks)}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _record_line(round_index: int, record) -> str:
    import json

    return json.dumps({"round": round_index, **record.to_dict()})


class _Progress:
    """A tqdm bar per round on stderr (quiet when stderr is not a terminal and CI is set)."""

    def __enter__(self):
        self.bar = None
        return self

    def start(self, round_index: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar:
            self.bar.close()
        self.bar = tqdm(total=total, desc=f"round {round_index}", unit="attempt", file=sys.stderr,
                        dynamic_ncols=True)  # fmt: skip

    def update(self, record) -> None:
        if self.bar:
            self.bar.set_postfix_str(f"{record.task} {record.status.value}", refresh=False)
            self.bar.update(1)

    def __exit__(self, *exc) -> None:
        if self.bar:
            self.bar.close()
