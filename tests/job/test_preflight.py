"""Preflight (kbx.job.preflight): every bad configuration a one-line `kbx: error:` in seconds, before any
job starts, any run is created or any kernel is judged; in a multirun, every job is checked first."""

from __future__ import annotations

import re
import socket
import time

import pytest
from omegaconf import OmegaConf

from kbx.core.errors import ConfigError
from kbx.driver.limits import INTERPRETER_TIMEOUT_FACTOR, scaled_timeout_s
from kbx.job import preflight
from kbx.sweeps.compose import compose, compose_unchecked

pytestmark = pytest.mark.e2e


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("kbx: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


def test_unreachable_tracking_server_is_one_line_in_seconds(kbx_cli, tmp_path):
    uri = f"http://127.0.0.1:{closed_port()}"
    start = time.monotonic()
    code, out, err = kbx_cli("kbx.run", "method=reference", "task=Math/add", "hardware=cpu", f"tracking_uri={uri}")
    elapsed = time.monotonic() - start
    assert code == 2
    line = one_error_line(err)
    assert f"tracking store {uri} is unreachable" in line and "tracking_uri=" in line
    assert elapsed < 60, f"{elapsed:.0f} s: the store was retried instead of refused"  # was 254 s


def test_multirun_checks_every_job_before_the_first_starts(kbx_cli, tmp_path):
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"task": "Math/add", "predict": "x = 1"}\n')
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code, out, err = kbx_cli("kbx.run", "-m", "method=reference,predictions", f"++method.path={preds}",
                             "task=Math/add", "hardware=cpu", f"tracking_uri={uri}",
                             f"hydra.sweep.dir={tmp_path}/multirun")  # fmt: skip
    assert code == 2
    line = one_error_line(err)
    assert "job 0 of 2 (method=reference" in line and "method.path" in line and "method=predictions" in line
    assert "Launching" not in out + err and not (tmp_path / "mlflow.db").exists()


def test_multirun_keeps_hydras_listing_of_valid_options(kbx_cli, tmp_path):
    code, out, err = kbx_cli("kbx.run", "-m", "method=reference,nope", "hardware=cpu",
                             f"hydra.sweep.dir={tmp_path}/multirun")  # fmt: skip
    assert code != 0
    assert "Could not find 'method/nope'" in err and "Available options" in err and "reference" in err


def test_a_bad_second_job_stops_the_multirun_before_the_first(kbx_cli, tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code, out, err = kbx_cli("kbx.run", "-m", "eval.check_timeout_s=30,-5", "task=Math/add", "hardware=cpu",
                             f"tracking_uri={uri}", f"hydra.sweep.dir={tmp_path}/multirun")  # fmt: skip
    assert code == 2
    assert "job 1 of 2" in one_error_line(err) and "eval.check_timeout_s: expected a number > 0, got -5" in err
    assert not (tmp_path / "mlflow.db").exists()


# ----- the checks themselves, on composed configs -------------------------------------------


def config(*overrides: str):
    return compose(["hardware=cpu", *overrides])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("eval.check_timeout_s=0", "eval.check_timeout_s: expected a number > 0, got 0"),
        ("eval.time_timeout_s=-1", "eval.time_timeout_s: expected a number > 0, got -1"),
        ("eval.memory_limit_gb=0.01", "eval.memory_limit_gb: expected a number >= 2 (a worker needs that much address"),
        ("eval.workers=0", "eval.workers: expected an integer >= 1, got 0"),
        ("eval.interpreter_timeout_factor=0", "eval.interpreter_timeout_factor: expected a number > 0, got 0"),
        ("eval.timing.side_budget_s=0", "eval.timing.side_budget_s: expected a number > 0, got 0"),
        ("++eval.timing.budget=1", "eval.timing.budget: unknown key; did you mean eval.timing.side_budget_s?"),
        ("experiment=", "experiment: expected a non-empty string (the MLflow experiment's name, e.g. experiment=kbx)"),
        ("++method.n=3", "method.n: not a setting of method=reference (it belongs to method=best_of_n)"),
        ("++method.bogus=1", "method.bogus: not a setting of method=reference; valid keys: name"),
        ("tracking_uri=sqlite:////proc/kbx-no/mlflow.db", "is not writable"),
    ],
)
def test_check_config_refuses(override, message, tmp_path):
    cfg = compose_unchecked(["hardware=cpu", override])  # as Hydra composes it for kbx.run
    with pytest.raises(ConfigError, match=re.escape(message)):
        preflight.check_config(cfg, tmp_path)
        preflight.check_tracking(str(cfg.tracking_uri))


def test_defaults_pass_and_timeouts_are_tens_of_seconds_on_a_gpu(tmp_path):
    cfg = config()
    preflight.check_config(cfg, tmp_path)
    assert 10 <= cfg.eval.check_timeout_s <= 90 and cfg.eval.time_timeout_s <= 180
    assert scaled_timeout_s(cfg.eval.check_timeout_s, "cuda") == cfg.eval.check_timeout_s
    assert scaled_timeout_s(cfg.eval.check_timeout_s, "cpu") == cfg.eval.check_timeout_s * INTERPRETER_TIMEOUT_FACTOR


def test_output_file_checks(tmp_path):
    preflight.check_output_file(tmp_path / "out.json", "--json")
    with pytest.raises(ConfigError, match="does not exist"):
        preflight.check_output_file(tmp_path / "missing" / "out.json", "--json")
    with pytest.raises(ConfigError, match="is a directory"):
        preflight.check_output_file(tmp_path, "--json")
    assert not list(tmp_path.iterdir()), "the probe leaves nothing behind"


def test_database_tracking_store_on_a_closed_port_is_refused():
    with pytest.raises(ConfigError, match="is unreachable"):
        preflight.check_tracking(f"postgresql://u:p@127.0.0.1:{closed_port()}/db")
    preflight.check_tracking("")  # the local store needs no server
    assert OmegaConf.is_config(config())


def test_a_directory_tracking_store_is_refused_before_any_work(monkeypatch):
    """MLflow 3 refuses new runs in a file store only when it first writes, after the job's work."""
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for uri in ("file:///tmp/kbx-runs", "./runs"):
        with pytest.raises(ConfigError, match="sqlite:///PATH/mlflow.db"):
            preflight.check_tracking(uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    preflight.check_tracking("file:///tmp/kbx-runs")  # the user's explicit choice


def _slow_mlflow_server(delay_s: float):
    """A local HTTP server that answers like MLflow's REST API (experiment not found) after `delay_s`."""
    import http.server
    import threading

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            time.sleep(delay_s)
            body = b'{"error_code": "RESOURCE_DOES_NOT_EXIST"}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def test_a_tracking_server_slow_to_answer_is_reachable_one_that_never_answers_is_not(monkeypatch):
    """Connecting gets the short timeout; a server that accepted gets TRACKING_ANSWER_TIMEOUT_S to answer
    (a fresh MLflow server on PostgreSQL took over 5 s on a loaded CI machine and the job was refused)."""
    server, uri = _slow_mlflow_server(0.6)
    try:
        preflight.check_tracking(uri, timeout_s=0.2)  # answers after the connect timeout: still a server
        monkeypatch.setattr(preflight, "TRACKING_ANSWER_TIMEOUT_S", 0.3)
        with pytest.raises(ConfigError, match=r"is unreachable \(timed out"):
            preflight.check_tracking(uri, timeout_s=0.2)
    finally:
        server.shutdown()


def test_a_multirun_expands_into_jobs_as_hydras_basic_sweeper_does():
    from kbx.run import _jobs

    jobs = _jobs(["method=reference,predictions", "hardware=cpu", "category=math,fusion"])
    assert jobs == [[f"method={m}", "hardware=cpu", f"category={c}"]
                    for m in ("reference", "predictions") for c in ("math", "fusion")]  # fmt: skip
    assert _jobs(["task=[Math/add,Math/sub]"]) == [["task=[Math/add,Math/sub]"]]  # a list is one value
    assert _jobs(["iteration.rounds=range(1,3)"]) == [["iteration.rounds=1"], ["iteration.rounds=2"]]
    with pytest.raises(ConfigError):
        _jobs(["llm.temperature=interval(0,1)"])
