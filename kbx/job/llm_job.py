"""A job's LLM side: the client built from the `llm` and `budget` groups, and what the job run
records about its calls (totals, tags, the settings hash that tells jobs of one method apart)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from kbx.core.errors import ConfigError
from kbx.core.record import Status
from kbx.methods.loop import TaskResult

NO_LLM = "none"  # llm_model and llm_settings of a job whose method asks no LLM
LLM_SETTINGS_KEYS = ("model", "api_base", "temperature", "max_tokens")
LLM_SETTINGS_HASH_CHARS = 12
LLM_ERROR_TAG = "kbx.llm_error"
TRUNCATED_TAG = "kbx.truncated"
SERVED_MODEL_TAG = "kbx.llm_served_model"
TAG_CHARS = 5000  # MLflow keeps at most 8000 characters of a tag value
CACHE_REPLAY_TAG = "kbx.cache_replay"


def llm_settings_hash(cfg: DictConfig) -> str:
    """A short hash of what decides an LLM method's answers besides its name: the model and endpoint,
    sampling (temperature, max_tokens), the prompt variant, the method's own keys and the per-task
    caps. Jobs of one method name with different settings are told apart by it (analysis groups by it)."""
    cfg = OmegaConf.to_container(cfg, resolve=True)
    llm = {k: cfg["llm"].get(k) for k in LLM_SETTINGS_KEYS}
    budget = {k: cfg["budget"].get(k) for k in ("max_calls", "max_tokens")}
    blob = json.dumps({"llm": llm, "prompt": cfg["prompt"], "method": cfg["method"], "budget": budget},
                      sort_keys=True, default=str)  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:LLM_SETTINGS_HASH_CHARS]


def build_llm(cfg: DictConfig, root: Path):
    """The LLM client from the `llm` group (its values checked by kbx.job.schema); a relative cache_dir
    is taken from `root`."""
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
        timeout_s=float(c["timeout_s"]), preflight_timeout_s=float(c["preflight_timeout_s"]), cache=str(c["cache"]),
        cache_dir=str(cache_dir if cache_dir.is_absolute() else root / cache_dir),
    )  # fmt: skip
    caps = job_caps(cfg)
    llm = LLMClient(settings, JobBudget(caps))
    if caps.max_cost_usd > 0 and not llm.priced():
        raise ConfigError(f"budget.max_cost_usd needs the price of {settings.model!r}, and there is "
                          f"{llm.price_source()}: set llm.price_in_usd_per_mtok and llm.price_out_usd_per_mtok")  # fmt: skip
    return llm


def job_caps(cfg: DictConfig):
    """budget.max_cost_usd and budget.max_total_tokens: the whole job's caps (0: none)."""
    from kbx.llm.budget import JobCaps

    return JobCaps(max_cost_usd=float(cfg.budget.max_cost_usd), max_tokens=int(cfg.budget.max_total_tokens))


def llm_totals(results) -> dict[str, float]:
    """Suite-wide LLM accounting for the parent run (latency and failed time: kbx.llm.client.Call)."""
    calls = [c.call for r in results for c in r.calls]
    costs = [c.cost_usd for c in calls if c.cost_usd == c.cost_usd]
    totals = {"llm_calls": float(len(calls)), "llm_errors": float(sum(bool(c.error) for c in calls)),
              "llm_cached_calls": float(sum(c.cached for c in calls)),
              "prompt_tokens": float(sum(c.prompt_tokens for c in calls)),
              "completion_tokens": float(sum(c.completion_tokens for c in calls)),
              "llm_truncated": float(sum(c.truncated for c in calls)),
              "llm_latency_s": float(sum(c.latency_s for c in calls)),
              "llm_failed_s": float(sum(c.failed_s for c in calls))}  # fmt: skip
    if costs:
        totals["cost_usd"] = float(sum(costs))
    for role in sorted({c.role for c in calls}):
        totals[f"tokens_{role}"] = float(sum(c.tokens for c in calls if c.role == role))
    return totals


def llm_tags(results, llm) -> dict[str, str]:
    """The job run's tags about its LLM: tasks it never answered (kbx.llm_error), answers cut off at
    their token limit (kbx.truncated), the model names the server answered as or lists when they differ
    from the name asked for (kbx.llm_served_model), and whether every answer came from the cache
    (kbx.cache_replay: the same answers as the job that recorded them, judged again)."""
    from kbx.llm.client import same_model

    calls = [c.call for r in results for c in r.calls]
    tags = {CACHE_REPLAY_TAG: str(bool(calls) and all(c.cached for c in calls)).lower(), LLM_ERROR_TAG: "",
            TRUNCATED_TAG: "", SERVED_MODEL_TAG: ""}  # "": none (a resumed run's old value is dropped)
    failed = [r.best() for r in results if r.best().status is Status.LLM_ERROR]
    if failed:
        tags[LLM_ERROR_TAG] = f"{len(failed)} of {len(results)} tasks got no answer from the LLM; last: {failed[-1].reason}"
    cut = [c for c in calls if c.truncated]
    if cut:
        tags[TRUNCATED_TAG] = (f"{len(cut)} of {len(calls)} LLM answers stopped at their token limit "
                               f"(llm.max_tokens={cut[0].max_tokens}); "
                               f"{sum(r.best().status is Status.TRUNCATED for r in results)} tasks ended truncated")  # fmt: skip
    served = {c.served_model for c in calls if c.served_model and not same_model(llm.asked_name, c.served_model)}
    if served | llm.other_models:
        tags[SERVED_MODEL_TAG] = ", ".join(sorted(served | llm.other_models))
    return {key: value[:TAG_CHARS] for key, value in tags.items()}


def repriced(result: TaskResult, llm) -> TaskResult:
    """A task read back from a cut-short run, its calls' cost at the current price (kbx.llm.client.LLMClient.cost)."""
    calls = [dataclasses.replace(c, call=dataclasses.replace(c.call, cost_usd=llm.cost(c.call.prompt_tokens,
                                                                                        c.call.completion_tokens)))
             for c in result.calls]  # fmt: skip
    return dataclasses.replace(result, calls=calls)
