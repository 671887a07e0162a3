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
import logging
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
            if budget is not None:  # tasks read back from a cut-short run count against the job's caps
                for call in (c.call for r in done.values() for c in r.calls):
                    budget.spend(call.cost_usd, call.tokens)
            watching = watch(evaluator) if not sys.stderr.isatty() else threading.Event()  # a terminal has the bar
            with _Progress(budget.progress if budget else None) as progress, _stopping(watching):
                fresh = run_suite(self.method, todo, evaluator, cfg.iteration.rounds,
                                  on_round_start=progress.start, on_record=progress.update, parallel=self.parallel(),
                                  on_round_done=on_round_done, on_task_done=log_task,
                                  halt=budget.reached if budget else None, judging=self.judging())  # fmt: skip
                seeds = {"public_seeds": ",".join(map(str, evaluator.settings.public_seeds)),
                         "secret_seed": evaluator.secret_seed if evaluator.secret_seed is not None else "none"}  # fmt: skip
            by_id = {**done, **{r.task.id: r for r in fresh}}
            results = [by_id[t.id] for t in self.tasks]
            summary = summarize(results)
            text = table(results)
            records = "\n".join(_record_line(j.round, j.record) for r in results for j in r.judged)
            llm = {**llm_totals(results), **self.budget_totals(fresh)} if self.llm is not None else {}
            stopped = self.budget_stopped(fresh) if self.llm is not None else {}
            files = {"config.yaml": self.resolved_yaml(), "records.jsonl": records + "\n", "summary.txt": text + "\n"}
            tracking.finish(summary, files, extra=llm, late_params=seeds, tags=stopped)  # seeds: once all is judged
            self.run_id = tracking.run_id
            status = "FINISHED"
            print(text)
            print(f"Compare the jobs in the MLflow UI{_ui_hint(tracking.tracker.uri)}: {tracking.tracker.jobs_url()}")
            return {**summary, **llm}
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
        """method x category x hardware x iterations, as the jobs table lists them."""
        rounds = int(self.cfg.iteration.rounds)
        return f"{self.cfg.method.name} | {self.cfg.category.name} | {self.hardware.name} | {rounds} round" + (
            "s" if rounds > 1 else "")

    def params(self) -> dict:
        import importlib.metadata

        import torch

        cfg = self.cfg
        gpu = provenance.collect(self.hardware.gpu_index if self.hardware.device == "cuda" else None)
        llm = {"llm_model": cfg.llm.model, "llm_api_base": cfg.llm.api_base, "llm_temperature": cfg.llm.temperature,
               "llm_max_tokens": cfg.llm.max_tokens, "llm_cache": cfg.llm.cache, "prompt": cfg.prompt.name,
               "budget_max_calls": cfg.budget.max_calls, "budget_max_tokens": cfg.budget.max_tokens,
               "budget_max_cost_usd": cfg.budget.get("max_cost_usd", 0),
               "budget_max_total_tokens": cfg.budget.get("max_total_tokens", 0)}  # fmt: skip
        return {
            **(llm if self.llm is not None else {}),
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


def build_llm(cfg: DictConfig, root: Path):
    """The LLM client from the `llm` group; a relative cache_dir is taken from `root`."""
    from kbx.llm import LLMClient, LLMSettings
    from kbx.llm.budget import JobBudget
    from kbx.llm.keys import api_key

    c = OmegaConf.to_container(cfg.llm, resolve=True)
    cache_dir = Path(str(c["cache_dir"]))
    settings = LLMSettings(
        model=str(c["model"] or ""), api_base=str(c["api_base"] or ""), api_key=api_key(c),
        temperature=float(c["temperature"]), max_tokens=int(c["max_tokens"]), concurrency=int(c["concurrency"]),
        retries=int(c["retries"]), rate_limit_retries=int(c["rate_limit_retries"]), backoff_s=float(c["backoff_s"]),
        price_in_usd_per_mtok=float(c["price_in_usd_per_mtok"]), price_out_usd_per_mtok=float(c["price_out_usd_per_mtok"]),
        timeout_s=float(c["timeout_s"]), cache=str(c["cache"]),
        cache_dir=str(cache_dir if cache_dir.is_absolute() else root / cache_dir),
    )  # fmt: skip
    caps = job_caps(cfg)
    llm = LLMClient(settings, JobBudget(caps))
    if caps.max_cost_usd > 0 and not llm.priced():
        raise ConfigError(f"budget.max_cost_usd needs the price of {settings.model!r}, which litellm does not know: "
                          "set llm.price_in_usd_per_mtok and llm.price_out_usd_per_mtok")  # fmt: skip
    return llm


def job_caps(cfg: DictConfig):
    """budget.max_cost_usd and budget.max_total_tokens: the whole job's caps (0: none)."""
    from kbx.llm.budget import JobCaps

    return JobCaps(max_cost_usd=float(cfg.budget.max_cost_usd), max_tokens=int(cfg.budget.max_total_tokens))


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


def llm_totals(results) -> dict[str, float]:
    """Suite-wide LLM accounting for the parent run."""
    calls = [c.call for r in results for c in r.calls]
    costs = [c.cost_usd for c in calls if c.cost_usd == c.cost_usd]
    totals = {"llm_calls": float(len(calls)), "llm_errors": float(sum(bool(c.error) for c in calls)),
              "llm_cached_calls": float(sum(c.cached for c in calls)),
              "prompt_tokens": float(sum(c.prompt_tokens for c in calls)),
              "completion_tokens": float(sum(c.completion_tokens for c in calls))}  # fmt: skip
    if costs:
        totals["cost_usd"] = float(sum(costs))
    for role in sorted({c.role for c in calls}):
        totals[f"tokens_{role}"] = float(sum(c.tokens for c in calls if c.role == role))
    return totals


def suite_version(tasks: dict[str, TaskInfo]) -> str:
    """A short hash of every task id and version: runs with equal suite_version judged the same tasks."""
    text = "\n".join(f"{t.id}@{t.spec.version}" for t in tasks.values())
    return f"{len(tasks)}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _ui_hint(tracking_uri: str) -> str:
    """How to open the UI: a server is already up; a database needs `make ui` (or `mlflow ui`) first."""
    return "" if tracking_uri.startswith(("http://", "https://")) else " (start it with `make ui`)"


def _record_line(round_index: int, record) -> str:
    import json

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
