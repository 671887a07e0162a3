"""What every key of a `kbx.run` configuration may hold: one model per config group (conf/<group>/*.yaml,
conf/config.yaml's own keys), checked on the composed config before any work (kbx.core.schema says
why pydantic, and how its failures become one line).

A new key goes in two places: its default and comment in the YAML file, its type and range in the
group's class here (a key the class lacks is refused as unknown, so a forgotten one shows at once).
A new method: its conf/method/<name>.yaml and a `MethodSettings` subclass listed in METHODS (its keys
are the builder's keyword arguments; tests/job/test_schema.py checks that they agree).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal, Union

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import Field, StringConstraints, create_model, model_validator

from kbx.contract.timing_policy import TimingPolicy
from kbx.core.errors import ConfigError
from kbx.core.hardware import ALL_GPUS
from kbx.core.schema import Schema, Text, rule, validate
from kbx.llm.client import CACHE_MODES
from kbx.methods.inductor import MODES as INDUCTOR_MODES
from kbx.methods.llm import FEEDBACK_LEVELS, HISTORY_MODES
from kbx.protocol import SANDBOX_MODES

# The address space a CPU worker needs to import torch and Triton and run a task's correctness cases:
# Activation/gelu and MatrixMultiply/matmul experts pass at 1 GiB and crash at 0.5 GiB (docs/BENCHMARKS.md),
# so a limit below this would charge kbx's own floor to the kernel.
MIN_MEMORY_LIMIT_GB = 2.0
BACKENDS = ("local", "ray")
PREDICTIONS_BUILDER = "kbx.methods.predictions.build"  # conf/method/predictions.yaml's _target_

Count = Annotated[int, Field(ge=0)]  # 0 allowed (a cap of 0 is no cap)
Positive = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(gt=0)]
Temperature = Annotated[float, Field(ge=0)]


# ----- methods (conf/method/*.yaml): told apart by `name` ------------------------------------------


class MethodSettings(Schema):
    target: Text = Field(alias="_target_")  # the builder, kbx.job.runner.build_method calls it with the rest


class Reference(MethodSettings):
    name: Literal["reference"]


class Predictions(MethodSettings):
    name: Literal["predictions"]
    path: Text
    allow_empty: bool


class OneShot(MethodSettings):
    name: Literal["oneshot"]


class BestOfN(MethodSettings):
    name: Literal["best_of_n"]
    n: Positive
    temperature: Temperature


class Iterative(MethodSettings):
    name: Literal["iterative"]
    feedback: Literal[FEEDBACK_LEVELS]
    history: Literal[HISTORY_MODES]
    stop_when_correct: bool


class Geak(MethodSettings):
    name: Literal["geak"]
    feedback: Literal[FEEDBACK_LEVELS]
    candidates: Positive
    ancestors: Positive
    judge: bool
    mutation: bool
    max_debug: Positive
    temperature: Temperature


class KernelAgent(MethodSettings):
    name: Literal["kernelagent"]
    feedback: Literal[FEEDBACK_LEVELS]
    workers: Positive
    history_size: Positive
    test_call: bool
    first_pass_wins: bool
    seed_temperature: Temperature
    temperature_step: Temperature


class Stark(MethodSettings):
    name: Literal["stark"]
    feedback: Literal[FEEDBACK_LEVELS]
    epsilon: float = Field(ge=0, le=1)
    n_root: Positive
    n_child_max: Positive
    leaderboard: Positive
    plan_temperature: Temperature
    code_temperature: Temperature
    seed: int


class Inductor(MethodSettings):
    name: Literal["inductor"]
    mode: Literal[INDUCTOR_MODES]


METHODS = (Reference, Predictions, OneShot, BestOfN, Iterative, Geak, KernelAgent, Stark, Inductor)


# ----- the other groups -------------------------------------------------------------------------


class LLM(Schema):
    model: Text
    api_base: Text
    api_key: Text
    api_key_file: Text
    temperature: Temperature
    max_tokens: Count
    concurrency: Positive
    retries: Count
    rate_limit_retries: Count
    backoff_s: float = Field(ge=0)
    price_in_usd_per_mtok: float = Field(ge=0)
    price_out_usd_per_mtok: float = Field(ge=0)
    timeout_s: Seconds
    preflight_timeout_s: Seconds
    cache: Literal[CACHE_MODES]
    cache_dir: Text


class Budget(Schema):
    max_calls: Count
    max_tokens: Count
    max_cost_usd: float = Field(ge=0)
    max_total_tokens: Count


class Iteration(Schema):
    rounds: Positive


class Prompt(Schema):
    name: Text
    example: bool
    hardware: bool
    math: bool
    compile_times: list[Text] = []  # kbx.bench eval --method inductor results, for the P feedback


class Tracking(Schema):
    traces: bool


class Category(Schema):
    name: Text


class Slurm(Schema):
    partition: Text | None
    constraint: Text | None
    gpus_per_node: Positive | None
    cpus_per_task: Positive | None
    mem_gb: Annotated[float, Field(gt=0)] | None
    timeout_min: Positive


class EvalDefaults(Schema):
    workers: Positive


class Hardware(Schema):
    name: Text
    kind: Literal["auto", "cpu", "cuda"]
    nvml_match: Text
    peak_bw_gbs: float = Field(ge=0)
    peak_fp32_tflops: float = Field(ge=0)
    peak_tf32_tflops: float = Field(ge=0)
    peak_bf16_tflops: float = Field(ge=0)
    l2_mb: float = Field(ge=0)
    gpu_index: Count
    gpus: Literal[ALL_GPUS] | list[Count]
    force: bool
    eval_defaults: EvalDefaults
    slurm: Slurm


def _timing_model() -> type[Schema]:
    """eval.timing: any knob of TimingPolicy, each optional (the policy's default) and positive; a knob
    whose default is 0 (an index) may be 0. Built from the dataclass, so a new knob needs no edit here."""
    types = {"int": int, "float": float}
    fields = {f.name: (Annotated[types[str(f.type)], Field(ge=0) if f.default == 0 else Field(gt=0)], f.default)
              for f in dataclasses.fields(TimingPolicy)}  # fmt: skip
    return create_model("Timing", __base__=Schema, **fields)


Timing = _timing_model()


class Eval(Schema):
    workers: Positive
    public_seeds: list[int]
    secret_seed: bool
    check_timeout_s: Seconds
    time_timeout_s: Seconds
    interpreter_timeout_factor: float = Field(gt=0)
    memory_limit_gb: float = Field(
        ge=MIN_MEMORY_LIMIT_GB, description="a worker needs that much address space to import torch and Triton")
    min_free_gpu_gb: float = Field(ge=0)
    timing: Timing
    keep_jobs: bool
    sandbox: Literal[SANDBOX_MODES]
    backend: Literal[BACKENDS]
    ray_address: Text
    ray_actors: int = Field(ge=0, description="0: one per GPU")


class RunConfig(Schema):
    """conf/config.yaml composed: its groups and its own keys."""

    method: Annotated[Union[METHODS], Field(discriminator="name")]  # noqa: UP007 - a union of a tuple
    category: Category
    hardware: Hardware
    iteration: Iteration
    llm: LLM
    prompt: Prompt
    budget: Budget
    eval: Eval
    task: Text | list[Text]
    experiment: Annotated[Text, StringConstraints(strip_whitespace=True, min_length=1)] = Field(
        description="the MLflow experiment's name, e.g. experiment=kbx")
    tracking_uri: Text
    tracking: Tracking
    resume: bool

    @model_validator(mode="after")
    def _ray_needs_named_hardware(self):
        """With eval.backend=ray the GPUs are the Ray actors', on other nodes: nothing here can detect
        or pick them."""
        if self.eval.backend != "ray":
            return self
        if self.hardware.name == "auto":
            raise rule("eval.backend=ray needs a named hardware profile (hardware=cpu, h100, ...): the GPUs are the "
                       "Ray workers', so hardware=auto cannot detect them here")  # fmt: skip
        if self.hardware.gpus != ALL_GPUS and self.hardware.gpus:
            raise rule("hardware.gpus picks GPUs of this host; with eval.backend=ray Ray places one actor per GPU: "
                       "set eval.ray_actors instead")  # fmt: skip
        return self


def check(cfg) -> RunConfig:
    """The composed config (a DictConfig) against RunConfig; a ConfigError of one line if it does not fit."""
    try:
        data = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:  # an interpolation that does not resolve
        raise ConfigError(" ".join(str(exc).split())) from None
    data.pop("hydra", None)
    method = data.get("method")
    if isinstance(method, dict) and method.get("_target_") == PREDICTIONS_BUILDER:
        # Stored kernels are labelled with the method that wrote them (method=predictions method.name=geak):
        # the builder says which settings apply, the name is only the label.
        data["method"] = {**method, "name": "predictions"}
    return validate(RunConfig, data)
