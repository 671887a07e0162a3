"""`python -m kbx.sweep` against the scripted LLM server: outcomes depend on the configuration
(more rounds rescue a broken first answer; the `math` prompt gets a correct kernel at once), so a
sweep must find the better region, prune hopeless trials, survive a killed worker and share a study
between two workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.llm_server import ScriptedServer, broken, expert, fenced, fix_after_error, key_file

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-kbx-sweep-SECRET-0123456789abcdef"
pytestmark = pytest.mark.e2e


def math_prompt_only(messages: list[dict], n: int) -> str:
    """The expert kernel when the prompt carries the PyTorch reference (prompt=math), else a broken one."""
    text = "\n".join(m["content"] for m in messages)
    if "Reply with the word ok" in messages[-1]["content"]:
        return "ok"
    task = "Math/add" if "Task Math/add." in text else "Activation/gelu"
    return fenced(expert(task) if "The reference the result is compared against" in text else broken(task))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def common(srv: ScriptedServer, tmp_path: Path, key: str = "dummy") -> list[str]:
    return [f"storage=sqlite:///{tmp_path / 'optuna.db'}", "hardware=cpu", "llm.model=openai/x",
            f"llm.api_base={srv.base}", f"llm.api_key_file={key_file(tmp_path, key)}",
            "llm.cache=off", "eval.secret_seed=false", "experiment=sweeptest",
            f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}"]  # fmt: skip


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbx.sweep", *args]


def env() -> dict:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def trials(tmp_path: Path, study: str):
    import optuna

    return optuna.load_study(study_name=study, storage=f"sqlite:///{tmp_path / 'optuna.db'}").get_trials()


def trial_states(tmp_path: Path, study: str) -> list[str]:
    """The study's trial states, [] while it is not readable (not created yet, or mid-write)."""
    import optuna
    import sqlalchemy

    try:
        return [t.state.name for t in trials(tmp_path, study)]
    except (KeyError, optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError):
        return []


def logged_trials(tmp_path: Path, study: str) -> set[str]:
    """The trials with a job run in MLflow; empty while the store is not readable."""
    import mlflow
    import sqlalchemy

    try:
        return set(job_runs(tmp_path, study)["tags.kbx.trial"])
    except (KeyError, mlflow.exceptions.MlflowException, sqlalchemy.exc.SQLAlchemyError):
        return set()


def job_runs(tmp_path: Path, study: str):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["sweeptest"])
    return runs[(runs["tags.kbx.role"] == "job") & (runs["tags.kbx.study"] == study)]


def test_done_when_command(kbx_cli, tmp_path):
    """The issue's command: 3 trials, in the Optuna storage and as tagged MLflow parent runs, plus the summary run."""
    import mlflow

    with ScriptedServer(fix_after_error) as srv:
        code, out, err = kbx_cli("kbx.sweep", "sweeps/refine_budget.yaml", "n_trials=3", "study=S",
                                 "task=Activation/gelu", *common(srv, tmp_path, KEY))  # fmt: skip
    assert code == 0, err[-3000:]
    done = [t for t in trials(tmp_path, "S") if t.state.is_finished()]
    assert len(done) == 3 and sorted(t.number for t in done) == [0, 1, 2]
    runs = job_runs(tmp_path, "S")
    assert sorted(runs["tags.kbx.trial"].astype(int)) == [0, 1, 2]
    assert set(runs["run_id"]) == {t.user_attrs["mlflow_run_id"] for t in done}
    assert set(runs["tags.kbx.trial_state"]) <= {"complete", "pruned"}
    for t in done:  # the trial's parameters are what the run used
        run = runs[runs["run_id"] == t.user_attrs["mlflow_run_id"]].iloc[0]
        assert int(run["params.iteration"]) == t.params["iteration.rounds"]
        assert run["params.prompt"] == t.params["prompt"]
    client = mlflow.tracking.MlflowClient()
    summary = mlflow.search_runs(experiment_names=["sweeptest"], filter_string="tags.`kbx.role` = 'sweep'")
    assert len(summary) == 1 and summary.iloc[0]["metrics.n_complete"] + summary.iloc[0]["metrics.n_pruned"] == 3
    files = {f.path for f in client.list_artifacts(summary.iloc[0]["run_id"], "sweep")}
    assert {"sweep/best.json", "sweep/history_correct_rate.png", "sweep/trials.csv"} <= files
    # the API key is in neither store: Optuna's database (trial attributes), MLflow's, any artifact
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaks == [tmp_path / "api-key.txt"]  # the key file it came from, and nothing else


GRID = """
overrides: [method=iterative, task=Math/add]
space:
  iteration.rounds: {type: int, low: 1, high: 2}
objectives: [{metric: correct_rate, direction: maximize}]
sampler: {name: grid, seed: 0}
pruner: none
n_trials: 2
heartbeat_s: 1
"""


HOLD_MAX_S = 600  # how long the scripted LLM holds the second trial's request (the worker is killed first)


def test_finds_better_region_and_resumes_after_a_killed_worker(tmp_path):
    """Rounds=2 rescues the broken first answer, rounds=1 cannot; the first worker is killed (SIGKILL, with
    its evaluator children) in the middle of its second trial, while the LLM holds that trial's first
    kernel request and once its job run exists (killed after a fixed sleep instead, a fast machine once
    let the trial's job finish first); rerunning the command finishes the study with that trial's
    parameters retried, no trial lost."""
    import optuna

    held, release = threading.Event(), threading.Event()

    def hold_in_second_trial(messages, n):
        if "Reply with the word ok" not in messages[-1]["content"] and not held.is_set():
            if trial_states(tmp_path, "grid") == ["COMPLETE", "RUNNING"]:
                held.set()
                release.wait(HOLD_MAX_S)
        return fix_after_error(messages, n)

    path = write(tmp_path, "grid.yaml", GRID)
    with ScriptedServer(hold_in_second_trial) as srv:
        cmd = sweep_cmd(str(path), "study=grid", *common(srv, tmp_path))
        first = subprocess.Popen(cmd, cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + HOLD_MAX_S
            while not held.wait(1) and time.monotonic() < deadline and first.poll() is None:
                pass
            assert held.is_set() and first.poll() is None, "the first worker ended before it could be killed"
            # The job logs on a thread of its own: its run may come after its first LLM request.
            while "1" not in logged_trials(tmp_path, "grid") and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)  # the worker and its evaluator processes
            first.wait()
            release.set()
        time.sleep(3)  # longer than the heartbeat grace period (2 x heartbeat_s)
        second = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    ts = trials(tmp_path, "grid")
    assert [t.state.name for t in ts] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert ts[2].params == ts[1].params  # the killed trial, retried
    assert {t.params["iteration.rounds"]: t.value for t in ts if t.state.name == "COMPLETE"} == {1: 0.0, 2: 1.0}
    best = optuna.load_study(study_name="grid", storage=f"sqlite:///{tmp_path / 'optuna.db'}").best_trial
    assert best.params == {"iteration.rounds": 2}
    runs = job_runs(tmp_path, "grid").set_index("tags.kbx.trial")  # the killed trial's run, closed by the rerun
    assert sorted(runs.index.astype(int)) == [0, 1, 2]
    assert list(runs.loc[["0", "1", "2"], "status"]) == ["FINISHED", "KILLED", "FINISHED"]
    assert runs.loc["1", "tags.kbx.trial_state"] == "killed"


SHARED = """
overrides: [method=iterative, method.stop_when_correct=true, iteration.rounds=2, task=Math/add]
space:
  prompt: [base, math]
objectives: [{metric: correct_rate, direction: maximize}]
sampler: {name: grid, seed: 0}
pruner: {name: threshold, lower: 0.5, n_warmup_steps: 0}
n_trials: 4
"""


def test_two_workers_share_a_study_and_prune(tmp_path):
    """Two processes on one sqlite study: unique trial numbers, one MLflow run per trial, the shared
    n_trials reached. prompt=base never gets a correct kernel: pruned after round 0 (one LLM call)."""
    path = write(tmp_path, "shared.yaml", SHARED)
    with ScriptedServer(math_prompt_only) as srv:
        cmd = sweep_cmd(str(path), "study=shared", *common(srv, tmp_path))
        procs = [subprocess.Popen(cmd, cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]  # fmt: skip
        outs = [p.communicate(timeout=900) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-3000:]
    ts = trials(tmp_path, "shared")
    numbers = [t.number for t in ts]
    assert numbers == list(range(len(ts))) and len(ts) >= 4
    assert {t.state.name for t in ts} == {"COMPLETE", "PRUNED"}
    assert all(t.params["prompt"] == "math" and t.value == 1.0 for t in ts if t.state.name == "COMPLETE")
    pruned = [t for t in ts if t.state.name == "PRUNED"]
    assert pruned and all(t.params["prompt"] == "base" for t in pruned)
    runs = job_runs(tmp_path, "shared")
    assert sorted(runs["tags.kbx.trial"].astype(int)) == numbers  # no duplicates, none missing
    by_trial = runs.set_index(runs["tags.kbx.trial"].astype(int))
    for t in pruned:
        assert by_trial.loc[t.number, "tags.kbx.trial_state"] == "pruned"
        assert by_trial.loc[t.number, "metrics.llm_calls"] == 1.0  # round 1 never ran


OBJ = "objectives: [{metric: correct_rate, direction: maximize}]\n"
BAD = {
    "not_yaml.yaml": ("space: [unclosed", "not valid YAML"),
    "unknown_key.yaml": ("spaces: {}\n", "spaces: unknown key; did you mean space?"),
    "not_a_mapping.yaml": ("- space\n", "expected a mapping with keys description, overrides, space, objectives"),
    "no_space.yaml": (OBJ, "space: missing; expected a non-empty mapping"),
    "bad_range.yaml": ("space: {iteration.rounds: {type: int, low: 3, high: 1}}\n" + OBJ,
                       "space.iteration.rounds: low (3) is above high (1)"),
    "bad_low.yaml": ("space: {iteration.rounds: {type: int, low: a, high: 1}}\n" + OBJ,
                     "space.iteration.rounds.low: expected an integer, got 'a'"),
    "bad_type.yaml": ("space: {iteration.rounds: {type: integer, low: 1, high: 2}}\n" + OBJ,
                      "space.iteration.rounds.type: expected one of categorical, float, int, got 'integer'"),
    "bad_field.yaml": ("space: {iteration.rounds: {type: int, low: 1, high: 2, choices: [1]}}\n" + OBJ,
                       "space.iteration.rounds.choices: not a setting of type=int (it belongs to type=categorical)"),
    "bad_log.yaml": ("space: {llm.temperature: {type: float, low: 0, high: 1, log: true}}\n" + OBJ,
                     "space.llm.temperature: log needs low > 0 and no step"),
    "bad_when.yaml": ("space: {method.n: {type: int, low: 2, high: 3, when: {method: best_of_n}}}\n" + OBJ,
                      "space.method.n: when: method must be a categorical parameter listed before this one"),
    "bad_metric.yaml": ("space: {prompt: [base, math]}\nobjectives: [{metric: accuracy, direction: maximize}]\n",
                        "objectives.0.metric: expected one of correct_rate, compile_rate"),
    "bad_direction.yaml": ("space: {prompt: [base, math]}\nobjectives: [{metric: correct_rate, direction: up}]\n",
                           "objectives.0.direction: expected one of maximize, minimize, got 'up'"),
    "twice.yaml": ("space: {prompt: [base, math]}\nobjectives: [{metric: correct_rate, direction: maximize}, "
                   "{metric: correct_rate, direction: minimize}]\n", "objectives: an objective metric is listed twice"),
    "bad_sampler.yaml": ("space: {prompt: [base, math]}\nsampler: {name: annealing}\n" + OBJ,
                         "sampler.name: expected one of tpe, random, grid"),
    "grid_float.yaml": ("space: {llm.temperature: {type: float, low: 0, high: 1}}\nsampler: grid\n" + OBJ,
                        "sampler grid needs discrete parameters; llm.temperature is a float range"),
    "bad_pruner.yaml": ("space: {prompt: [base, math]}\npruner: 3\n" + OBJ,
                        "pruner: expected a mapping with keys name, got 3"),
    "bad_n_trials.yaml": ("space: {prompt: [base, math]}\nn_trials: many\n" + OBJ,
                          "n_trials: expected an integer >= 1, got 'many'"),
    "bad_overrides.yaml": ("overrides: [method]\nspace: {prompt: [base, math]}\n" + OBJ,
                           "overrides.0: expected a string (key=value), got 'method'"),
    "doubled.yaml": ("overrides: [prompt=math]\nspace: {prompt: [base, math]}\n" + OBJ,
                     "overrides: prompt is also in space; list it in one place"),
    "bad_key.yaml": ("space: {llm.temperatur: {type: float, low: 0, high: 1}}\n" + OBJ,
                     "space: llm.temperatur: unknown key; did you mean llm.temperature?"),
    "bad_value.yaml": ("space: {iteration.rounds: {type: int, low: 0, high: 2}}\n" + OBJ,
                       "space: iteration.rounds: expected an integer >= 1, got 0"),
    "prune_multi.yaml": ("space: {prompt: [base, math]}\npruner: median\nobjectives: [{metric: correct_rate, "
                         "direction: maximize}, {metric: total_tokens, direction: minimize}]\n", "cannot prune"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_sweep_file_is_one_line_error(name, tmp_path, capsys):
    from kbx.sweep import main

    text, message = BAD[name]
    code = main([str(write(tmp_path, name, text)), f"storage=sqlite:///{tmp_path}/o.db", "hardware=cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("kbx: error: ") and "\n" not in err and message in err, err


def test_unknown_override_is_an_error_before_any_trial(tmp_path, capsys):
    from kbx.sweep import main

    code = main(["sweeps/refine_budget.yaml", "llm.temprature=0.5", f"storage=sqlite:///{tmp_path}/o.db"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "kbx: error: llm.temprature: unknown key; did you mean llm.temperature?"
    assert not (tmp_path / "o.db").exists()  # no study was created


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["n_trials=many"], "n_trials: expected an integer >= 1, got 'many'"), (["n_trials=0"], "n_trials: expected an "
     "integer >= 1, got 0"), (["iteration.rounds=2"], "iteration.rounds is searched by refine_budget.yaml")],
)
def test_bad_command_line_of_a_sweep_is_one_line(argv, message, tmp_path, capsys):
    from kbx.sweep import main

    code = main(["sweeps/refine_budget.yaml", *argv, f"storage=sqlite:///{tmp_path}/o.db"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("kbx: error: ") and "\n" not in err and message in err, err
    assert not (tmp_path / "o.db").exists()
