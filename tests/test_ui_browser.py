"""The MLflow UI in a real browser: the link `make ui` prints shows every job side by side.

A store with two jobs of every task (184 each) is served by `mlflow server`; headless Chromium
opens the printed link and must show both jobs with their `suite/correct_rate` on the first page,
without "Load more"; a job's description then leads to its task runs. Needs Debian's `chromium`
and `chromium-driver` and the `selenium` package (the dev extra); skipped, with the reason, where
one is missing. `KBX_UI_SCREENSHOTS=DIR` also saves the pages (docs/ui-compare.png comes from here).
"""

from __future__ import annotations

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
    port = free_port()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port",
           str(port), "--workers", "1"]  # fmt: skip
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - the server's, closed below
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_healthy(port, server)
        yield uri, port, jobs, len(tasks)
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
