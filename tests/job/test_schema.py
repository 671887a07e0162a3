"""The configuration schema (kbx/job/schema.py, kbx/core/schema.py): every group option of conf/ fits it,
each group refuses an unknown key and a wrong type in one line naming the key and what it may hold, and
the real CLI stops with that line, exit status 2 and nothing recorded."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kbx.core.errors import EXIT_USER_ERROR, ConfigError
from kbx.job import schema
from kbx.sweeps.compose import CONF_DIR, compose, keys_forced

REPO = Path(__file__).resolve().parents[2]
GROUPS = ("method", "category", "hardware", "iteration", "llm", "prompt", "budget")
# Keyword arguments a method builder gets from the job, not from conf/method/*.yaml (kbx.job.runner.method_context).
CONTEXT_PARAMS = {"llm", "prompt", "hardware", "budget", "public_seeds"}


@pytest.mark.parametrize(
    ("group", "option"), [(g, p.stem) for g in GROUPS for p in sorted((CONF_DIR / g).glob("*.yaml"))]
)
def test_every_option_of_every_group_fits_the_schema(group, option):
    schema.check(compose([f"{group}={option}"]))


def test_each_method_schema_has_the_keys_of_its_yaml_and_its_builder():
    """A key in conf/method/<name>.yaml, in its schema class and among its builder's keyword arguments:
    all three or none (a key only in the builder could never be set; one only in the YAML would be refused)."""
    from hydra.utils import get_method

    classes = {c.model_fields["name"].annotation.__args__[0]: c for c in schema.METHODS}
    for path in sorted((CONF_DIR / "method").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        fields = {f.alias or name for name, f in classes[data["name"]].model_fields.items()}
        assert fields == set(data), path.name
        builder = set(inspect.signature(get_method(data["_target_"])).parameters) - CONTEXT_PARAMS
        assert builder == fields - {"_target_"}, path.name
    assert len(classes) == len(list((CONF_DIR / "method").glob("*.yaml")))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["llm.temprature=0.5"], "llm.temprature: unknown key; did you mean llm.temperature?"),
        (["llm.concurrency=many"], "llm.concurrency: expected an integer >= 1, got 'many'"),
        (["llm.cache=sometimes"], "llm.cache: expected one of off, record, replay, auto, got 'sometimes'"),
        (["llm.timeout_s=0"], "llm.timeout_s: expected a number > 0, got 0"),
        (["eval.wokers=2"], "eval.wokers: unknown key; did you mean eval.workers?"),
        (["eval.keep_jobs=maybe"], "eval.keep_jobs: expected true or false, got 'maybe'"),
        (["eval.sandbox=docker"], "eval.sandbox: expected one of namespaces, none, got 'docker'"),
        (["eval.public_seeds=[0,a]"], "eval.public_seeds.1: expected an integer, got 'a'"),
        (["eval.check_timeout_s=nan"], "eval.check_timeout_s: expected a number > 0, got nan"),
        (["budget.max_cost=1"], "budget.max_cost: unknown key; did you mean budget.max_cost_usd?"),
        (["budget.max_calls=-1"], "budget.max_calls: expected an integer >= 0, got -1"),
        (["budget.max_total_tokens=1.5"], "budget.max_total_tokens: expected an integer >= 0, got 1.5"),
        (["iteration.round=2"], "iteration.round: unknown key; did you mean iteration.rounds?"),
        (["iteration.rounds=three"], "iteration.rounds: expected an integer >= 1, got 'three'"),
        (["iteration.rounds=true"], "iteration.rounds: expected an integer >= 1, got true"),
        (["prompt.examples=true"], "prompt.examples: unknown key; did you mean prompt.example?"),
        (["prompt.math=2"], "prompt.math: expected true or false, got 2"),
        (["category.nme=x"], "category.nme: unknown key; did you mean category.name?"),
        (["hardware.gpu=0"], "hardware.gpu: unknown key; did you mean hardware.gpus?"),
        (["hardware.gpus=some"], "hardware.gpus: expected all or a list of integers >= 0, got 'some'"),
        (["hardware.slurm.mem_gb=-1"], "hardware.slurm.mem_gb: expected a number > 0 or null, got -1"),
        (["experimnt=x"], "experimnt: unknown key; did you mean experiment?"),
        (["resume=yes"], "resume: expected true or false, got 'yes'"),
        (["method=best_of_n", "method.n=three"], "method.n: expected an integer >= 1, got 'three'"),
        (["method=iterative", "method.feedbak=E"], "method.feedbak: not a setting of method=iterative; did you mean "
                                                   "method.feedback?"),  # fmt: skip
        (["method=iterative", "method.feedback=X"], "method.feedback: expected one of G, E, P, got 'X'"),
        (["method=stark", "method.epsilon=1.5"], "method.epsilon: expected a number >= 0 and <= 1, got 1.5"),
        (["method=inductor", "method.mode=fast"], "method.mode: expected one of default, max-autotune-no-cudagraphs, "
                                                  "got 'fast'"),  # fmt: skip
        (["method=geak", "method.n=3"], "method.n: not a setting of method=geak (it belongs to method=best_of_n)"),
        (["method.name=nope"], "method.name: expected one of best_of_n, geak, inductor, iterative, kernelagent, "
                               "oneshot, predictions, reference, stark, got 'nope'"),  # fmt: skip
        (["~llm.temperature"], "llm.temperature: missing; expected a number >= 0"),
        (["eval.backend=slurm"], "eval.backend: expected one of local, ray, got 'slurm'"),
        (["eval.backend=ray", "eval.ray_actors=-1", "hardware=cpu"], "eval.ray_actors: expected an integer >= 0 "
                                                                     "(0: one per GPU), got -1"),  # fmt: skip
        (["eval.backend=ray", "hardware=auto"], "eval.backend=ray needs a named hardware profile"),
    ],
)
def test_a_wrong_key_or_value_is_one_line_naming_it(overrides, message):
    with pytest.raises(ConfigError) as caught:
        compose(overrides)
    text = str(caught.value)
    assert text.startswith(message) and "\n" not in text, text


def test_keys_are_forced_and_group_choices_left_alone():
    """Hydra would refuse a key the config lacks itself ("Could not override"): it is added, for the schema."""
    given = ["llm.model=x", "method=iterative", "hydra/launcher=slurm", "hydra.job.chdir=true", "+a=1", "++b=2", "~c",
             "task=[Math/add,Activation/gelu]", "method@x=oneshot"]  # fmt: skip
    assert keys_forced(given) == ["++llm.model=x", "method=iterative", "hydra/launcher=slurm", "hydra.job.chdir=true",
                                  "+a=1", "++b=2", "~c", "++task=[Math/add,Activation/gelu]", "method@x=oneshot"]  # fmt: skip
    cfg = compose(["llm.model=openai/x", "task=[Math/add,Activation/gelu]", "experiment=2024"])
    assert cfg.llm.model == "openai/x" and list(cfg.task) == ["Math/add", "Activation/gelu"]


@pytest.mark.e2e
def test_cli_refuses_a_misspelt_key_in_one_line_exit_2_and_records_nothing(tmp_path):
    """`python -m kbx.run llm.temprature=0.5` from an empty directory: the schema's one line, exit status 2,
    and the directory still empty (no mlruns/ store, no run, no Hydra output directory)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    for args in (["llm.temprature=0.5", "method=iterative"], ["-m", "method=reference,best_of_n", "method.n=three"]):
        proc = subprocess.run([sys.executable, "-m", "kbx.run", *args, "hardware=cpu"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == EXIT_USER_ERROR, proc.stderr[-3000:]
        assert proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert proc.stderr.strip().splitlines() == [
            "kbx: error: llm.temprature: unknown key; did you mean llm.temperature?" if args[0] != "-m" else
            "kbx: error: job 0 of 2 (method=reference method.n=three hardware=cpu): method.n: not a setting of "
            "method=reference (it belongs to method=best_of_n)"]  # fmt: skip
        assert not list(tmp_path.iterdir()), "nothing may be recorded for a bad configuration"


def test_stored_predictions_may_carry_the_name_of_the_method_that_wrote_them():
    """`method=predictions method.name=geak` (the GEAK corpus as a job): the settings are predictions', the name a label."""
    from kbx.job.schema import check

    cfg = compose(["method=predictions", "method.name=geak", "method.path=preds.jsonl"])
    assert check(cfg).method.path == "preds.jsonl" and cfg.method.name == "geak"
