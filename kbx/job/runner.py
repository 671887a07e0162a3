"""One Hydra job: resolve hardware, select tasks, build the method, evaluate, track, summarise.

Everything that can be wrong with the configuration is checked in `Job.prepare`, before any
worker starts or any run is created: its types and values by the schema (kbx/job/schema.py, through
kbx.job.preflight), what depends on this machine and the endpoints here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import logging
import math
import platform
import sys
import threading
import time
import uuid
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import kbx
from kbx.contract.timing_policy import TimingPolicy
from kbx.core import hardware as hw
from kbx.core import provenance
from kbx.core.errors import ConfigError
from kbx.core.record import EvalRecord, Status
from kbx.driver.evaluator import EvalSettings
from kbx.driver.inflight import QUARANTINE_AFTER, InFlightJournal, JournaledEvaluator
from kbx.driver.limits import INTERPRETER_TIMEOUT_FACTOR, scaled_timeout_s
from kbx.driver.pool import open_evaluator
from kbx.driver.ray_pool import RaySettings
from kbx.driver.watch import watch
from kbx.job import preflight
from kbx.job.llm_job import (
    LLM_ERROR_TAG,
    NO_LLM,
    build_llm,
    llm_settings_hash,
    llm_tags,
    llm_totals,
    repriced,
)
from kbx.job.summary import summarize, table
from kbx.methods.loop import Judged, TaskResult, proposers, run_suite
from kbx.protocol import SANDBOX_NAMESPACES, SANDBOX_NONE
from kbx.tasks.registry import discover, select
from kbx.tasks.spec import TaskInfo

log = logging.getLogger("kbx")

PLAIN_PROGRESS_EVERY_S = 30.0  # progress lines where stderr is no terminal: often enough to see a run move
# How a job is run, not what it computes: left out of its identity (config_hash), so a job cut short
# on one backend or Slurm partition is taken up on another.
HOW_RUN_KEYS = ("resume", "eval.backend", "eval.ray_address", "eval.ray_actors", "hardware.slurm", "tracking")


class Interrupted(Exception):
    """The job was stopped by Ctrl-C (SIGINT); its parent run is marked KILLED, to be resumed."""


@dataclasses.dataclass
class Job:
    cfg: DictConfig
    root: Path
    hardware: hw.Hardware
    tasks: list[TaskInfo]
    all_tasks: dict[str, TaskInfo]
    method: object
    llm: object = None  # kbx.llm.LLMClient for LLM methods, else None
    run_id: str = ""  # the MLflow parent run, once `run` has started it
    devices: int = 0  # evaluators judging at once (GPUs, or Ray actors), once the evaluator is open

    @classmethod
    def prepare(cls, cfg: DictConfig, root: Path) -> Job:
        preflight.check_config(cfg, root)
        preflight.check_tracking(str(cfg.tracking_uri or ""))
        if eval_backend(cfg) == "ray":  # the GPUs are the Ray actors'; the pool checks them when it starts
            hardware = hw.from_config(cfg.hardware)
        else:
            hardware = hw.resolve(hw.from_config(cfg.hardware), hw.load_profiles(), force=bool(cfg.hardware.get("force")))
        apply_eval_defaults(cfg, hardware)
        all_tasks = discover()
        ids = [cfg.task] if isinstance(cfg.task, str) else list(cfg.task or [])
        tasks = select(all_tasks, ids, cfg.category.name)
        if not tasks:
            raise ConfigError(f"no tasks selected (category={cfg.category.name}, task={ids})")
        llm = None
        if "llm" in builder_params(cfg.method):
            llm = build_llm(cfg, root)
            llm.preflight()  # a missing key or unreachable endpoint fails here, before any task starts
        method = build_method(cfg.method, root, context=method_context(cfg, hardware, llm, root))
        if hasattr(method, "report_unknown"):
            for line in method.report_unknown(set(all_tasks)):
                log.warning(line)
        return cls(cfg, root, hardware, tasks, all_tasks, method, llm)

    def run(self, tags: dict[str, str] | None = None, on_round_done=None) -> dict[str, float]:
        """Evaluate, track and summarise. `tags` go on the parent run; `on_round_done(k, correct_rate)`
        may stop the job early by returning True (see kbx.methods.loop.run_suite). Sets `self.run_id`.

        Each task's child run is logged as soon as the task completes. With `resume` (the default),
        an unfinished parent run of the same configuration (same `config_hash`) is taken up again:
        tasks with a FINISHED child run are read back, not rerun; the others are run."""
        ray = self.ray_settings()
        with open_evaluator(self.eval_settings(), self.hardware.indices, ray) as evaluator:
            evaluator.start()  # its processes import torch while the tracking store is opened
            self.devices = len(getattr(evaluator, "members", ())) or 1
            if ray and self.hardware.device == "cuda":
                self.hardware = dataclasses.replace(self.hardware, gpu_name=evaluator.gpu_name)
            return self._run(evaluator, tags, on_round_done)

    def _run(self, evaluator, tags: dict[str, str] | None, on_round_done) -> dict[str, float]:
        from kbx.tracking.job_runs import JobTracking
        from kbx.tracking.tracker import Tracker, may_hold_runs

        cfg = self.cfg
        params = self.params()
        # kbx's commit is a tag, not a param: a job cut short resumes after a fix; every record has its own.
        tags = {"kbx.method": cfg.method.name, "kbx.eval_backend": eval_backend(cfg),
                "kbx.commit": provenance.kbx_commit(), **(tags or {})}  # fmt: skip
        # A store that does not exist yet holds no run to resume: judging starts while it is created,
        # unless a candidate could take the driver down before its run exists (kbx.tracking.job_runs).
        resume = bool(cfg.get("resume", True))
        lookup = resume and may_hold_runs(str(cfg.tracking_uri or ""), self.root)
        before_judging = resume and str(cfg.eval.get("sandbox", SANDBOX_NAMESPACES)) == SANDBOX_NONE
        session = {"kbx.session": uuid.uuid4().hex[:12]}  # which driver process judged the task
        journal = InFlightJournal(self.root, "", session["kbx.session"])
        traces = write_traces(cfg)
        tracking = JobTracking(lambda: Tracker(cfg.tracking_uri, cfg.experiment, self.root, secrets=self.secrets(),
                                               write_traces=traces), journal, session)  # fmt: skip
        status, done = "FAILED", {}
        try:
            done = tracking.open(self.run_name(), params, tags, self.tasks, lookup, before_judging)
            self.run_id = tracking.run_id
            evaluator = JournaledEvaluator(evaluator, journal)

            def log_task(result) -> None:
                tracking.log_task(result, cfg.method.name, self.hardware)

            for result in quarantined([t for t in self.tasks if t.id not in done], journal, evaluator.settings):
                log_task(result)
                done[result.task.id] = result
            todo = [t for t in self.tasks if t.id not in done]
            costs = getattr(evaluator, "costs", None)  # longest first (kbx.driver.costs)
            todo = [todo[i] for i in costs.order([t.id for t in todo])] if costs else todo
            budget = self.llm.budget if self.llm is not None else None
            done = self.charged(done)
            also = self.llm.in_flight if self.llm is not None else None
            watching = watch(evaluator, also=also) if not sys.stderr.isatty() else threading.Event()  # a terminal has the bar
            with _Progress(budget.progress if budget else None) as progress, _stopping(watching):
                fresh = run_suite(self.method, todo, evaluator, cfg.iteration.rounds,
                                  on_round_start=progress.start, on_record=progress.update, parallel=self.parallel(),
                                  on_round_done=on_round_done, on_task_done=log_task,
                                  halt=budget.reached if budget else None, judging=self.judging())  # fmt: skip
                seeds = {"public_seeds": ",".join(map(str, evaluator.settings.public_seeds)),
                         "secret_seed": evaluator.secret_seed if evaluator.secret_seed is not None else "none"}  # fmt: skip
            figures = self._conclude(tracking, {**done, **{r.task.id: r for r in fresh}}, fresh, seeds)
            status = "FINISHED"
            return figures
        except KeyboardInterrupt:
            status = "KILLED"
            tracking.end(status)
            have = len({*done, *tracking.logged})
            raise Interrupted(f"MLflow run {tracking.run_id or '(not created)'} marked KILLED with {have} of "
                              f"{len(self.tasks)} tasks logged; run the same command again to resume it"
                              ) from None  # fmt: skip
        finally:
            if status == "FAILED":
                tracking.end(status)
            self.run_id = tracking.run_id
            tracking.close()

    def charged(self, done: dict) -> dict:
        """Tasks read back from a cut-short run, their calls priced now and counted against the job's caps."""
        if self.llm is None:
            return done
        done = {task_id: repriced(r, self.llm) for task_id, r in done.items()}
        for call in (c.call for r in done.values() for c in r.calls):
            self.llm.budget.spend(call.cost_usd, call.tokens)
        return done

    def _conclude(self, tracking, by_id: dict, fresh: list, seeds: dict) -> dict[str, float]:
        """The job run's end: summary, files, LLM totals and tags, its final state; the table on stdout.
        A task the LLM never answered has no verdict: such a job is not done (FAILED, and the same command
        resumes it, redoing just those tasks), though every figure of the tasks that were judged is logged."""
        results = [by_id[t.id] for t in self.tasks]
        summary = summarize(results)
        text = table(results)
        records = "\n".join(_record_line(j.round, j.record) for r in results for j in r.judged)
        llm = {**llm_totals(results), **self.budget_totals(fresh)} if self.llm is not None else {}
        tags = {**self.budget_stopped(fresh), **llm_tags(results, self.llm)} if self.llm is not None else {}
        files = {"config.yaml": self.resolved_yaml(), "records.jsonl": records + "\n", "summary.txt": text + "\n"}
        ended = "FAILED" if summary["n_llm_error"] else "FINISHED"
        tracking.finish(summary, files, extra=llm, late_params=seeds, tags=tags, status=ended)  # seeds: once all is judged
        self.run_id = tracking.run_id
        print(text)
        if ended == "FAILED":
            log.warning("%s; MLflow run %s marked FAILED: run the same command again to redo those tasks",
                        tags[LLM_ERROR_TAG], tracking.run_id)  # fmt: skip
        print(f"Compare the jobs in the MLflow UI{_ui_hint(tracking.tracker.uri)}: {tracking.tracker.jobs_url()}")
        return {**summary, **llm}

    def budget_totals(self, fresh: list) -> dict[str, float]:
        """How far the job got against its caps (none: {})."""
        budget = self.llm.budget
        if not budget.caps.any:
            return {}
        totals = budget.totals()
        totals["budget_tasks_not_started"] = float(sum(not r.calls for r in fresh))
        return totals

    def budget_stopped(self, fresh: list) -> dict[str, str]:
        """When a cap was reached: the job run's tag `kbx.stopped` says which, and a warning how many
        tasks never got a proposal."""
        budget = self.llm.budget
        reason = budget.reached() if budget.caps.any else ""
        if not reason:
            return {}
        log.warning("%s: %d tasks never got a proposal", reason, sum(not r.calls for r in fresh))
        return {"kbx.stopped": reason}

    def judging(self) -> int:
        """Tasks handed to the evaluator at once: its workers over every GPU (Ray actor)."""
        return int(self.cfg.eval.workers) * self.device_count()

    def parallel(self) -> int:
        """Proposals made at once (kbx.methods.loop.proposers): every LLM slot, or every evaluator worker, busy."""
        return proposers(self.judging(), int(self.cfg.llm.concurrency) if self.llm is not None else None)

    def device_count(self) -> int:
        """Evaluators judging at once: the open pool's members, else the GPUs of `hardware.gpus` (1 on the CPU)."""
        return self.devices or (len(self.hardware.indices) if self.hardware.device == "cuda" else 1)

    def secrets(self) -> tuple[str, ...]:
        from kbx.llm.keys import api_key

        key = api_key(OmegaConf.to_container(self.cfg.llm, resolve=True)) if self.cfg.get("llm") else ""
        return (key,) if key else ()

    def resolved_yaml(self) -> str:
        """The resolved configuration with the API key redacted (what MLflow gets)."""
        cfg = OmegaConf.create(OmegaConf.to_container(self.cfg, resolve=True))
        if cfg.get("llm") and cfg.llm.get("api_key"):
            cfg.llm.api_key = "<redacted>"
        return OmegaConf.to_yaml(cfg)

    def config_hash(self) -> str:
        """The job's identity: a hash of the resolved configuration, less HOW_RUN_KEYS."""
        cfg = OmegaConf.create(OmegaConf.to_container(OmegaConf.create(self.resolved_yaml()), resolve=True))
        for key in HOW_RUN_KEYS:
            parent, _, leaf = key.rpartition(".")
            node = OmegaConf.select(cfg, parent) if parent else cfg
            if node is not None:
                node.pop(leaf, None)
        return hashlib.sha256(OmegaConf.to_yaml(cfg).encode()).hexdigest()[:12]

    def eval_settings(self) -> EvalSettings:
        e = self.cfg.eval
        factor = float(e.get("interpreter_timeout_factor", INTERPRETER_TIMEOUT_FACTOR))
        return EvalSettings(
            device=self.hardware.device,
            gpu_index=self.hardware.gpu_index,
            public_seeds=tuple(int(s) for s in e.public_seeds),
            secret_seed=bool(e.secret_seed),
            workers=int(e.workers),
            check_timeout_s=scaled_timeout_s(e.check_timeout_s, self.hardware.device, factor),
            time_timeout_s=scaled_timeout_s(e.time_timeout_s, self.hardware.device, factor),
            memory_limit_gb=float(e.memory_limit_gb),
            min_free_gpu_gb=float(e.min_free_gpu_gb),
            keep_jobs=bool(e.keep_jobs),
            sandbox=str(e.get("sandbox", SANDBOX_NAMESPACES)),
            timing=TimingPolicy(**dict(e.get("timing") or {})),
        )

    def ray_settings(self) -> RaySettings | None:
        """The Ray pool's settings with `eval.backend=ray`, else None (evaluation on this host)."""
        e = self.cfg.eval
        if eval_backend(self.cfg) != "ray":
            return None
        force = bool(self.cfg.hardware.get("force"))
        return RaySettings(address=str(e.ray_address), actors=int(e.ray_actors),
                           expect_gpu="" if force else self.hardware.nvml_match)  # fmt: skip

    def run_name(self) -> str:
        """method x tasks x hardware x iterations (x model, for an LLM method), as the jobs table lists them.
        The tasks are the category, or the task picked (`task=`), or how many were picked."""
        rounds = min(int(self.cfg.iteration.rounds), getattr(self.method, "max_rounds", math.inf))  # oneshot: 1
        picked = [self.cfg.task] if isinstance(self.cfg.task, str) else list(self.cfg.task or [])
        what = self.cfg.category.name if not picked else picked[0] if len(self.tasks) == 1 else f"{len(self.tasks)} tasks"
        name = f"{self.cfg.method.name} | {what} | {self.hardware.name} | {rounds} round" + ("s" if rounds > 1 else "")
        return name + (f" | {self.cfg.llm.model}" if self.llm is not None else "")

    def params(self) -> dict:
        import importlib.metadata

        import torch

        cfg = self.cfg
        gpu = provenance.collect(self.hardware.gpu_index if self.hardware.device == "cuda" else None)
        llm = {"llm_model": cfg.llm.model, "llm_api_base": cfg.llm.api_base, "llm_temperature": cfg.llm.temperature,
               "llm_max_tokens": cfg.llm.max_tokens, "llm_cache": cfg.llm.cache, "prompt": cfg.prompt.name,
               "budget_max_calls": cfg.budget.max_calls, "budget_max_tokens": cfg.budget.max_tokens,
               "budget_max_cost_usd": cfg.budget.get("max_cost_usd", 0),
               "budget_max_total_tokens": cfg.budget.get("max_total_tokens", 0),
               "llm_settings": llm_settings_hash(cfg),
               "llm_price_source": self.llm.price_source() if self.llm is not None else ""}  # fmt: skip
        return {
            **(llm if self.llm is not None else {"llm_model": NO_LLM, "llm_settings": NO_LLM}),
            "method": cfg.method.name,
            "category": cfg.category.name,
            "hardware": self.hardware.name,
            "gpu_name": self.hardware.gpu_name or "none",
            "gpus": self.device_count() if self.hardware.device == "cuda" else 0,
            "device": self.hardware.device,
            "sandbox": str(cfg.eval.get("sandbox", SANDBOX_NAMESPACES)),
            "iteration": cfg.iteration.rounds,
            "n_tasks": len(self.tasks),
            "tasks": ",".join(t.id for t in self.tasks)[:6000],
            "config_hash": self.config_hash(),
            "kbx_version": kbx.__version__,
            "suite_version": suite_version(self.all_tasks),
            "torch_version": torch.__version__,
            # from its metadata: importing triton (nothing else in the driver does) took 1-2.5 s of every job
            "triton_version": importlib.metadata.version("triton"),
            # the driver's GPU ("" on a CPU); with eval.backend=ray each record has its own node's
            "nvidia_driver_version": gpu["nvidia_driver_version"],
            "cuda_runtime_version": gpu["cuda_runtime_version"],
            "python_version": platform.python_version(),
        }


def apply_eval_defaults(cfg: DictConfig, hardware: hw.Hardware) -> None:
    """The evaluator's defaults of the hardware that judges (kbx.core.hardware.eval_defaults) for each `eval`
    key the command line left to the profile (still `${hardware.eval_defaults.KEY}`): composing
    hardware=auto can only give auto.yaml's, the GPU found decides."""
    for key, value in hw.eval_defaults(hardware).items():
        if key in cfg.eval and OmegaConf.is_interpolation(cfg.eval, key):
            cfg.eval[key] = value


def quarantined(tasks: list[TaskInfo], journal: InFlightJournal, settings: EvalSettings) -> list:
    """Results for the tasks that earlier drivers died with in flight too often (kbx.driver.inflight)."""
    deaths = journal.deaths()
    out = []
    for task in tasks:
        if deaths.get(task.id, 0) >= QUARANTINE_AFTER:
            log.warning("quarantining %s: %d drivers died while judging it", task.id, deaths[task.id])
            record = EvalRecord(task=task.id, task_version=task.spec.version, status=Status.QUARANTINED,
                                reason=f"{deaths[task.id]} drivers died while this task was being judged; skipped",
                                label="quarantine", device=settings.device, sandbox=settings.sandbox,
                                **provenance.collect(None))  # fmt: skip
            out.append(TaskResult(task, [Judged(0, record, "")]))
    return out


def eval_backend(cfg: DictConfig) -> str:
    """`eval.backend` ("local" or "ray", checked by the schema with the keys that go with it)."""
    return str(cfg.eval.backend)


def write_traces(cfg: DictConfig) -> bool:
    """`tracking.traces` (checked by the schema): whether each LLM task's trajectory is written as an
    MLflow trace; true when the config has no `tracking` group."""
    return bool((cfg.get("tracking") or {}).get("traces", True))


def builder_params(method_cfg: DictConfig) -> set[str]:
    from hydra.utils import get_method

    return set(inspect.signature(get_method(method_cfg._target_)).parameters)


def build_method(method_cfg: DictConfig, root: Path, context: dict | None = None):
    """Call the method's builder (its `_target_`) with the remaining keys; relative paths from `root`.

    `context` (llm, prompt, hardware, budget) is passed for the parameters the builder declares.
    """
    from hydra.utils import get_method

    kwargs = {k: v for k, v in OmegaConf.to_container(method_cfg, resolve=True).items() if k != "_target_"}
    if isinstance(kwargs.get("path"), str) and kwargs["path"] and not Path(kwargs["path"]).is_absolute():
        kwargs["path"] = str(root / kwargs["path"])
    builder = get_method(method_cfg._target_)
    wanted = set(inspect.signature(builder).parameters)
    kwargs.update({k: v for k, v in (context or {}).items() if k in wanted})
    return builder(**kwargs)


def method_context(cfg: DictConfig, hardware: hw.Hardware, llm, root: Path) -> dict:
    from kbx.llm.profile import load_compile_times
    from kbx.llm.prompt import PromptSettings
    from kbx.methods.llm import Budget

    p, b = cfg.prompt, cfg.budget
    compiled = load_compile_times(tuple(p.get("compile_times") or ()), hardware, root) if llm is not None else {}
    prompt = PromptSettings(name=str(p.name), example=bool(p.example), hardware=bool(p.hardware), math=bool(p.math),
                            compile_times=compiled)  # fmt: skip
    seeds = tuple(int(x) for x in cfg.eval.public_seeds)
    return {"llm": llm, "prompt": prompt, "hardware": hardware, "public_seeds": seeds,
            "budget": Budget(max_calls=int(b.max_calls), max_tokens=int(b.max_tokens))}  # fmt: skip


def suite_version(tasks: dict[str, TaskInfo]) -> str:
    """A short hash of every task id and version: runs with equal suite_version judged the same tasks."""
    text = "\n".join(f"{t.id}@{t.spec.version}" for t in tasks.values())
    return f"{len(tasks)}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _ui_hint(tracking_uri: str) -> str:
    """How to open the UI: a server is already up; a database needs `make ui` (or `mlflow ui`) first."""
    return "" if tracking_uri.startswith(("http://", "https://")) else " (start it with `make ui`)"


def _record_line(round_index: int, record) -> str:
    return json.dumps({"round": round_index, **record.to_dict()})


@contextlib.contextmanager
def _stopping(event: threading.Event):
    try:
        yield
    finally:
        event.set()


class _Progress:
    """Progress on stderr: a tqdm bar on a terminal; elsewhere (a log file, a remote GPU machine's
    captured output) one plain line at most every PLAIN_PROGRESS_EVERY_S seconds, and at the end.
    `spend()`, when given, adds the LLM cost and tokens so far to either."""

    def __init__(self, spend=None) -> None:
        self.spend = spend

    def __enter__(self):
        self.bar = None
        self.plain = not sys.stderr.isatty()
        self.done = self.total = 0
        self.last_line_s = time.monotonic()
        self.round_index = 0
        return self

    def start(self, round_index: int, total: int) -> None:
        """Tasks advance independently, so one count covers every attempt; its total grows as rounds start."""
        self.total += total
        self.round_index = round_index
        if self.plain:
            return
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(total=0, desc="attempts", unit="attempt", file=sys.stderr, dynamic_ncols=True)
        self.bar.total += total
        self.bar.set_description(f"attempts (round {round_index} started)", refresh=False)

    def update(self, record) -> None:
        self.done += 1
        if self.bar:
            spent = f" | {self.spend()}" if self.spend else ""
            self.bar.set_postfix_str(f"{record.task} {record.status.value}{spent}", refresh=False)
            self.bar.update(1)
        elif self.plain and (time.monotonic() - self.last_line_s >= PLAIN_PROGRESS_EVERY_S or self.done == self.total):
            self.last_line_s = time.monotonic()
            spent = f"; LLM so far {self.spend()}" if self.spend else ""
            print(f"kbx: {self.done}/{self.total} attempts judged (round {self.round_index} started); "
                  f"last: {record.task} {record.status.value}{spent}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self.bar:
            self.bar.close()
