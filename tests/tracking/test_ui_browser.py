"""The MLflow UI in a real browser: the link `make ui` prints shows every job side by side; a task run's
traces show its conversation.

A store with two jobs of every task (184 each) is served by `mlflow server`; headless Chromium
opens the printed link and must show both jobs with their `suite/correct_rate` on the first page,
without "Load more"; a job's description then leads to its task runs. Needs Debian's `chromium`
and `chromium-driver` and the `selenium` package (the dev extra); skipped, with the reason, where
one is missing. `KBX_UI_SCREENSHOTS=DIR` also saves the pages (docs/ui-compare.png and docs/ui-traces.png
come from here).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kbx.tracking import ui_links

CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = "chromedriver"
PAGE_TIMEOUT_S = 90  # the UI's first load compiles nothing, but this machine may be busy
SERVER_TIMEOUT_S = 120
WINDOW = (1600, 1000)
SCREENSHOT_WINDOW = (1500, 1250)  # tall enough for both rows of charts
SCREENSHOTS_ENV = "KBX_UI_SCREENSHOTS"

def missing() -> str:
    """Why the browser cannot run here ("" when it can)."""
    if not any(shutil.which(b) for b in CHROMIUM) or shutil.which(CHROMEDRIVER) is None:
        return "needs Chromium and its driver: apt-get install chromium chromium-driver (.ci/run does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium (pip install -e '.[dev]')"
    return ""


pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600), pytest.mark.skipif(bool(missing()), reason=missing())]


def start_browser():
    """Headless Chromium, the system's own (selenium downloads nothing when given both paths)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(arg)
    options.binary_location = next(shutil.which(b) for b in CHROMIUM if shutil.which(b))
    return webdriver.Chrome(options=options, service=Service(shutil.which(CHROMEDRIVER)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served_store(tmp_path):
    """Two finished jobs (reference, predictions) over every task, and an MLflow server on them."""
    from kbx.tasks import discover
    from kbx.tracking.tracker import Tracker
    from tests.ui_store import log_job

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "kbx", tmp_path)
    tasks = sorted(discover().values(), key=lambda t: t.id)
    jobs = {method: log_job(tracker, method, tasks, "h100", seed) for seed, method in enumerate(("reference", "predictions"))}
    with serve(uri, tmp_path) as port:
        yield uri, port, jobs, len(tasks)


@contextlib.contextmanager
def serve(uri: str, tmp_path: Path):
    """`mlflow server` on the store; yields its port."""
    port = free_port()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port",
           str(port), "--workers", "1"]  # fmt: skip
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - the server's, closed below
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_healthy(port, server)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
        log.close()


def wait_healthy(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + SERVER_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mlflow server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail("mlflow server did not come up")


# What the runs table shows per row: ag-grid splits a row over its pinned and scrolling parts, so
# cells are joined by the row's index.
ROWS_JS = r"""
const rows = {};
for (const cell of document.querySelectorAll('.ag-row [col-id]')) {
  const index = cell.closest('.ag-row').getAttribute('row-index');
  const lines = cell.innerText.trim().split('\n');  // a run name cell starts with its colour's hex code
  (rows[index] = rows[index] || {})[cell.getAttribute('col-id')] = lines[lines.length - 1].trim();
}
return Object.values(rows);
"""


def table_rows(driver) -> list[dict[str, str]]:
    return driver.execute_script(ROWS_JS)


def wait_for_rows(driver, count: int) -> list[dict[str, str]]:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, PAGE_TIMEOUT_S).until(lambda d: (rows := table_rows(d)) and len(rows) >= count and rows)


def test_printed_link_shows_both_jobs_and_their_correct_rate_without_paging(served_store):
    from selenium.webdriver.common.by import By

    from kbx.ui import jobs_link

    uri, port, jobs, _ = served_store
    line = jobs_link(uri, "kbx", port)  # what `make ui` prints
    url = line.rsplit(" ", 1)[-1]
    assert url.startswith(f"http://127.0.0.1:{port}/#/experiments/") and "workflowType=machine_learning" in url
    driver = start_browser()
    shots = Path(os.environ[SCREENSHOTS_ENV]) if os.environ.get(SCREENSHOTS_ENV) else None
    try:
        driver.get(url)
        rows = wait_for_rows(driver, 2)
        time.sleep(1)  # let the grid settle its columns
        rows = table_rows(driver)
        by_name = {r.get(ui_links.RUN_NAME_COLUMN, ""): r for r in rows}
        column = f"metrics.`{ui_links.HEADLINE_PREFIX}correct_rate`"
        for method, (_, summary) in jobs.items():
            name = f"{method} | all | h100 | 1 round"
            assert name in by_name, rows
            row = by_name[name]
            assert float(row[column]) == pytest.approx(summary["correct_rate"], abs=1e-3), row
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "suite/correct_rate" in body and "2 matching runs" in body
        assert "Load more" not in body
        headers = [h.text for h in driver.find_elements(By.CSS_SELECTOR, ".ag-header-cell") if h.is_displayed()]
        assert "suite/correct_rate" in headers  # a column on screen, not only in the DOM
        if shots:
            save_screenshots(driver, url, shots)
        job_id = jobs["predictions"][0]
        driver.get(url.split("/#/")[0] + f"/#/experiments/{experiment_of(uri, job_id)}/runs/{job_id}")
        link = wait_until(driver, lambda d: d.find_elements(By.PARTIAL_LINK_TEXT, "Task runs of this job"))[0]
        link.click()  # the description's link opens a tab on the job's task runs
        driver.switch_to.window(driver.window_handles[-1])
        tasks = wait_for_rows(driver, 1)
        names = [r.get(ui_links.RUN_NAME_COLUMN, "") for r in tasks]
        assert names[0] == "Activation/combined_activation" and names == sorted(names)
        assert len(set(names)) == len(names)  # this job's only: the other job's runs of a task would sit beside
        if shots:
            driver.save_screenshot(str(shots / "ui-tasks.png"))
    finally:
        driver.quit()


@pytest.fixture
def traced_store(tmp_path):
    """A finished job of an LLM method over two tasks, each task run with its trace (tests/llm_results.py), served."""
    from kbx.tracking.tracker import Tracker
    from tests.llm_results import CPU, trajectory

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "kbx", tmp_path)
    job = tracker.start_parent("geak | all | cpu | 2 rounds", {"method": "geak", "n_tasks": 2}, {"kbx.method": "geak"})
    started = time.time() - TRAJECTORY_AGO_S
    runs = {task: tracker.log_task(job, trajectory(task, started), "geak", CPU) for task in ("Math/add", "Math/sub")}
    tracker.finish_parent(job, {"n_tasks": 2.0, "correct_rate": 1.0}, {})
    with serve(uri, tmp_path) as port:
        yield port, tracker.tasks_experiment_id, runs


TRAJECTORY_AGO_S = 600  # the trajectories ran ten minutes ago (the traces view lists recent ones)


def test_a_task_runs_traces_show_its_conversation(traced_store):
    """From a task run's Traces tab: its trace, whose span tree holds the rounds, the calls and the evaluations; the
    generator's span shows the conversation (system, user, assistant), the evaluation span its verdict."""
    from selenium.webdriver.common.by import By

    port, experiment_id, runs = traced_store
    shots = Path(os.environ[SCREENSHOTS_ENV]) if os.environ.get(SCREENSHOTS_ENV) else None
    driver = start_browser()
    try:
        driver.get(f"http://127.0.0.1:{port}/#/experiments/{experiment_id}/runs/{runs['Math/add']}/traces")
        wait_until(driver, lambda d: "verdict" in body_text(d))  # the assessment columns of the traces table
        close_panels(driver)
        if shots:
            driver.set_window_size(*SCREENSHOT_WINDOW)
        row = wait_until(driver, lambda d: [e for e in d.find_elements(By.XPATH, "//*[contains(text(), 'tr-')]")
                                            if e.is_displayed()])  # fmt: skip
        click(driver, row[0])  # the trace's id opens it
        for name in ("round 0", "round 1", "evaluate round1/cand0", "reflector"):
            wait_until(driver, lambda d, n=name: span_named(d, n))
        click(driver, span_named(driver, "generator")[-1])  # round 1's: the kernel of round 0 and its verdict fed back
        wait_until(driver, lambda d: all(t in body_text(d) for t in ("You write Triton.", "Task Math/add.", "a = 1",
                                                                     "3 of 8 differ", "b = 2")))  # fmt: skip
        text = body_text(driver)
        assert "Assistant" in text and "System" in text and "openai/x" in text  # the conversation, as chat
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(shots / "ui-traces.png"))
        click(driver, span_named(driver, "evaluate round0/cand0")[0])
        wait_until(driver, lambda d: "case 0: 3 of 8 differ" in body_text(d) and "mismatch" in body_text(d))
    finally:
        driver.quit()


def body_text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def span_named(driver, name: str) -> list:
    """The span tree's entries of that name, on screen."""
    from selenium.webdriver.common.by import By

    return [e for e in driver.find_elements(By.XPATH, f"//span[normalize-space()='{name}']") if e.is_displayed()]


def click(driver, element) -> None:
    """Clicked by script: the trace drawer's resize handle lies over the span tree's left edge."""
    driver.execute_script("arguments[0].click()", element)


def close_panels(driver) -> None:
    """The assistant's side panel and first-visit tips, which would cover the page in a screenshot."""
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.XPATH, "//button[normalize-space()='Got it']") + driver.find_elements(
            By.CSS_SELECTOR, "button[aria-label=Close]"):  # fmt: skip
        with contextlib.suppress(Exception):
            button.click()
    time.sleep(1)


def save_screenshots(driver, url: str, folder: Path) -> None:
    """The jobs table, and the chart view comparing them (README's docs/ui-compare.png), banners closed."""
    from selenium.webdriver.common.by import By

    folder.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(*SCREENSHOT_WINDOW)
    for name, page in (("ui-jobs.png", url), ("ui-compare.png", url + "&compareRunsMode=CHART")):
        driver.get(page)
        wait_until(driver, lambda d: d.find_elements(By.PARTIAL_LINK_TEXT, "reference |"))
        time.sleep(3)  # the charts draw after the runs arrive
        for close in driver.find_elements(By.CSS_SELECTOR, "button[aria-label=Close]"):
            close.click()  # the assistant's side panel
        time.sleep(1)
        driver.save_screenshot(str(folder / name))
    driver.set_window_size(*WINDOW)
    driver.get(url)


def experiment_of(uri: str, run_id: str) -> str:
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri).get_run(run_id).info.experiment_id


def wait_until(driver, predicate):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, PAGE_TIMEOUT_S).until(predicate)
