"""The adversarial zoo: every other file in tests/zoo is one untrusted submission with a known verdict.

Each zoo file's docstring says what it tries and carries markers:
    TASK: Category/stem        fixture task under tests/fixtures/tasks
    EXPECT: status             the Status it must get (on every device unless EXPECT_GPU says otherwise)
    EXPECT_GPU: status         (optional) the Status on a CUDA device
    DEVICE: cpu|gpu            (optional) run only there; default both
    XFAIL: cpu|gpu|any: why    (optional) a known hole, kept as a strict xfail so a fix flips it

All attempts of a device go through one Evaluator in one `evaluate` call (the one evaluation path,
concurrently). Entries expected to hang get their own small Evaluator with a short check timeout,
warmed up first so the timeout measures the candidate and not the worker pool's start, and run
beside the main batch. Fake secrets are put in the driver's environment for the whole run; no
record may contain them in any form.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from kbx.contract.attempt import Attempt
from kbx.core.record import OUTPUT_TAIL_CHARS, EvalRecord, Status
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.protocol import SANDBOX_NAMESPACES as NAMESPACES
from kbx.tasks import discover

TESTS = Path(__file__).parents[1]  # tests/, above this file's folder
ZOO_DIR = TESTS / "zoo"
FIXTURE_TASKS = TESTS / "fixtures" / "tasks"
MAIN_CHECK_TIMEOUT_S = 120.0  # nothing but the hang entries comes near this
HANG_CHECK_TIMEOUT_S = 5.0
SECRETS = {
    "KBX_TEST_API_KEY": "sk-test-kbxzoo-3f9a1c7e5b2d4680",  # shaped like a provider key
    "KBX_TEST_AUTH_TOKEN": "zoo-plain-token-71c4e2",  # no recognisable shape: only name-based scrubbing helps
}


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    code: str
    task: str
    expect: str
    expect_gpu: str
    devices: frozenset[str]
    xfail: dict[str, str]

    def expected(self, device: str) -> str:
        return self.expect_gpu if device == "gpu" else self.expect


def _markers(text: str, key: str) -> list[str]:
    return re.findall(rf"^{key}:[ \t]*(.+?)[ \t]*$", text, re.MULTILINE)


def _load_entry(path: Path) -> Entry:
    code = path.read_text()
    doc = code.split('"""')[1] if code.startswith('"""') else ""  # raw text: some entries do not parse
    (task,), (expect,) = _markers(doc, "TASK"), _markers(doc, "EXPECT")
    statuses = {s.value for s in Status}
    expect_gpu = (_markers(doc, "EXPECT_GPU") or [expect])[0]
    assert {expect, expect_gpu} <= statuses, f"{path.name}: unknown status in EXPECT markers"
    devices = frozenset(_markers(doc, "DEVICE") or ["cpu", "gpu"])
    assert devices <= {"cpu", "gpu"}, f"{path.name}: DEVICE must be cpu or gpu"
    xfail = {}
    for marker in _markers(doc, "XFAIL"):
        where, _, why = marker.partition(":")
        for device in ("cpu", "gpu") if where.strip() == "any" else (where.strip(),):
            xfail[device] = why.strip()
    return Entry(path.stem, code, task, expect, expect_gpu, devices, xfail)


ENTRY_FILES = sorted(p for p in ZOO_DIR.glob("*.py") if p.name != Path(__file__).name)  # this file aside
ENTRIES = {e.name: e for e in map(_load_entry, ENTRY_FILES)}


def _forms(secret: str) -> list[str]:
    """The secret and the simple encodings a candidate might print it in."""
    return [secret, secret[::-1], secret.encode().hex()]


# A second driver process, started with the secrets in its environment from exec on (as a real run
# started from a shell with API keys exported) and one on its command line (as `llm.api_key=...`
# typed by a user), evaluating the entries that loot /proc: /proc/<pid>/environ shows a process's
# environment as it was at exec, so secrets set later with os.environ would not show there.
EXEC_ENV_DRIVER = """
import json, sys
from kbx.contract.attempt import Attempt
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.tasks import discover
tasks_dir, task, *paths = sys.argv[1:-1]
with Evaluator(EvalSettings(tasks_dir=tasks_dir, workers=1)) as ev:
    recs = ev.evaluate([Attempt(discover(tasks_dir)[task], open(p).read(), "exec-env") for p in paths])
print(json.dumps([r.to_dict() for r in recs]))
"""
EXEC_ENV_ENTRIES = ("secret_proc_ancestors", "sandbox_argv_secret")
ARGV_SECRET = "sk-argv-kbxzoo-9d2e4b6a1c3f5870"


def _start_exec_env_driver() -> subprocess.Popen:
    paths = [str(ZOO_DIR / f"{name}.py") for name in EXEC_ENV_ENTRIES]
    return subprocess.Popen(
        [sys.executable, "-c", EXEC_ENV_DRIVER, str(FIXTURE_TASKS), ENTRIES[EXEC_ENV_ENTRIES[0]].task, *paths,
         f"llm.api_key={ARGV_SECRET}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **SECRETS},
    )  # fmt: skip


# --- what the sandbox entries would change on the host, watched from outside ---------------------

ESCAPE_MARKER = ".kbx-zoo-escape"  # sandbox_write_outside.py
ESCAPEE = "kbx-zoo-escapee"  # sandbox_setsid_escape.py


@dataclasses.dataclass
class HostWatch:
    """Observations from outside the sandbox, taken while the zoo ran and after it."""

    tasks_dir: Path  # a copy of the fixture tasks the run judged against
    tasks_digest_before: str = ""
    tasks_digest_after: str = ""
    escape_files: list[str] = dataclasses.field(default_factory=list)
    escapees: list[int] = dataclasses.field(default_factory=list)
    connections: int = 0
    decoy_state: str = ""  # /proc state letter of a process standing in for another kbx job


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return h.hexdigest()


def _escape_targets() -> list[Path]:
    import torch

    import kbx

    homes = {"/root", os.path.expanduser("~"), tempfile.gettempdir(), "/tmp"}
    return [Path(d) / ESCAPE_MARKER for d in {str(Path(kbx.__file__).parents[1]), str(Path(torch.__file__).parent), *homes}]


def _escapee_pids() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as f:
                if ESCAPEE.encode() in f.read():
                    found.append(int(entry))
    return found


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@contextlib.contextmanager
def _host_watch(mp: pytest.MonkeyPatch):
    """A copy of the fixture tasks, a loopback listener (its port in KBX_ZOO_LISTEN_PORT), a decoy
    'other job' process; afterwards what the attacks left on the host."""
    for target in _escape_targets():
        target.unlink(missing_ok=True)
    store = TESTS.parent / ".kbx_cache" / "zoo"  # a store of the checkout's, that sandbox_write_outside looks for
    store.mkdir(parents=True, exist_ok=True)
    (store / "kernel.py").write_text("# another method's kernel\n")
    tmp = Path(tempfile.mkdtemp(prefix="kbx-zoo-tasks-"))
    watch = HostWatch(tasks_dir=tmp / "tasks")
    shutil.copytree(FIXTURE_TASKS, watch.tasks_dir, ignore=shutil.ignore_patterns("__pycache__"))
    watch.tasks_digest_before = _tree_digest(watch.tasks_dir)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", listener.getsockname()[1]))
    udp.settimeout(0.2)
    mp.setenv("KBX_ZOO_LISTEN_PORT", str(listener.getsockname()[1]))
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            for sock, accept in ((listener, True), (udp, False)):
                with contextlib.suppress(OSError):
                    conn = sock.accept()[0] if accept else sock.recvfrom(64)
                    watch.connections += 1
                    if accept:
                        conn.close()

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", "kbx-zoo-other-job"])
    try:
        yield watch
    finally:
        stop.set()
        thread.join()
        listener.close()
        udp.close()
        watch.decoy_state = _state(decoy.pid) if decoy.poll() is None else "dead"
        decoy.kill()
        decoy.wait()
        watch.tasks_digest_after = _tree_digest(watch.tasks_dir)
        watch.escape_files = [str(t) for t in _escape_targets() if t.exists()]
        watch.escapees = _escapee_pids()
        for pid in watch.escapees:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        for target in _escape_targets():
            target.unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _progress(index: int, rec: EvalRecord) -> None:
    """One line per judged entry (visible with `pytest -s`): where a slow zoo run is."""
    print(f"zoo {rec.label:32s} {rec.status.value:16s} {rec.wall_s:6.1f}s", flush=True)


def _evaluate_zoo(device: str, tasks_dir: Path) -> dict[str, EvalRecord]:
    """Every zoo entry for `device` through the evaluator; records by entry name."""
    tasks = discover(str(tasks_dir))
    entries = [e for e in ENTRIES.values() if device in e.devices]
    hangs = [e for e in entries if e.expected(device) == Status.TIMEOUT.value]
    rest = [e for e in entries if e not in hangs]
    settings = EvalSettings(device="cuda" if device == "gpu" else "cpu", tasks_dir=str(tasks_dir), workers=2,
                            check_timeout_s=MAIN_CHECK_TIMEOUT_S)  # fmt: skip
    records: dict[str, EvalRecord] = {}
    errors: list[BaseException] = []

    def attempts(chosen):
        return [Attempt(tasks[e.task], e.code, e.name) for e in chosen]

    def run_hangs() -> None:
        try:
            with Evaluator(dataclasses.replace(settings, workers=len(hangs))) as ev:
                # Start the worker pool under the long timeout, so the short one times the candidate alone.
                ev.evaluate([Attempt(tasks[hangs[0].task], "x = 1\n", "warm-up")])
                ev.settings = dataclasses.replace(ev.settings, check_timeout_s=HANG_CHECK_TIMEOUT_S)
                records.update({r.label: r for r in ev.evaluate(attempts(hangs), on_record=_progress)})
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    with pytest.MonkeyPatch.context() as mp:
        for name, value in SECRETS.items():
            mp.setenv(name, value)
        mp.setenv("KBX_TASKS_DIR", str(tasks_dir))
        thread = threading.Thread(target=run_hangs) if hangs else None
        if thread:
            thread.start()
        with Evaluator(settings) as ev:
            records.update({r.label: r for r in ev.evaluate(attempts(rest), on_record=_progress)})
        if thread:
            thread.join()
    if errors:
        raise errors[0]
    return records


@dataclasses.dataclass
class ZooRun:
    records: dict[str, EvalRecord]
    host: HostWatch
    exec_env_records: list[dict]  # EXEC_ENV_ENTRIES judged by a driver that had the secrets from exec on


def _zoo_run(device: str) -> ZooRun:
    driver = _start_exec_env_driver() if device == "cpu" else None  # runs beside the main batch
    try:
        with pytest.MonkeyPatch.context() as mp, _host_watch(mp) as host:
            records = _evaluate_zoo(device, host.tasks_dir)
        if driver is None:
            return ZooRun(records, host, [])
        out, err = driver.communicate(timeout=MAIN_CHECK_TIMEOUT_S)
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, err[-2000:]
    return ZooRun(records, host, json.loads(out.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def cpu_run() -> ZooRun:
    return _zoo_run("cpu")


@pytest.fixture(scope="module")
def cpu_records(cpu_run) -> dict[str, EvalRecord]:
    return cpu_run.records


@pytest.fixture(scope="module")
def gpu_run() -> ZooRun:
    return _zoo_run("gpu")


@pytest.fixture(scope="module")
def gpu_records(gpu_run) -> dict[str, EvalRecord]:
    return gpu_run.records


def _describe(rec: EvalRecord) -> str:
    return f"{rec.status.value}: {rec.reason} | {rec.error_type} | {rec.message[-600:]}"


def check_entry(entry: Entry, rec: EvalRecord, device: str) -> None:
    """The status, plus what that status promises about the rest of the record."""
    expected = Status(entry.expected(device))
    assert rec.status is expected, f"{entry.name}: expected {expected.value}, got {_describe(rec)}"
    assert rec.task == entry.task and rec.label == entry.name
    assert rec.correct == (expected in (Status.OK, Status.TIMING_SUSPECT))
    if expected in (Status.OK, Status.TIMING_SUSPECT):
        assert rec.cases_total > 0 and rec.cases_passed == rec.cases_total
        assert rec.triton_launches > 0
        if device == "gpu":
            assert rec.timed and math.isfinite(rec.speedup) and rec.speedup > 0
            assert len(rec.shapes) == len(discover(str(FIXTURE_TASKS))[entry.task].spec.perf)
        else:
            assert not rec.timed and rec.timing_skipped_reason
        if expected is Status.OK:
            assert rec.reason == ""
        else:
            assert rec.reason
    elif expected is Status.NO_TRITON:  # none launched in the cases, or none at a perf shape after launches in them
        at_a_perf_shape = rec.reason.startswith("perf shape ")
        assert (rec.triton_launches > 0) == at_a_perf_shape, rec.reason
        assert rec.cases_total > 0 and rec.cases_passed == rec.cases_total  # the values were right
    elif expected is Status.DECOY_KERNEL:
        assert rec.triton_launches > 0
        assert rec.cases_passed == rec.cases_total
    elif expected in (Status.MISMATCH, Status.UNWRITTEN_OUTPUT):
        # a timed call re-checked at a perf shape (its fastest repetition) fails after every case passed
        timed = rec.reason.startswith("perf shape ") and "its fastest timed call" in rec.reason
        assert rec.cases_passed == rec.cases_total if timed else rec.cases_passed < rec.cases_total, rec.reason
        if "rejected by the task's output check" not in rec.reason:  # distributional checks have no element report
            m = rec.mismatch
            assert m.case and 0 < m.count <= m.numel
            assert m.indices and len(m.got) == len(m.expected) == len(m.indices)
    elif expected is Status.REPLAYED_RESULT:  # right answers, every case passed, and one of them came from memory
        assert rec.cases_total > 0 and rec.cases_passed == rec.cases_total and rec.timed
        assert "the same inputs again took" in rec.reason and not rec.correct
    elif expected in (Status.WRONG_DTYPE, Status.WRONG_SHAPE, Status.WRONG_TYPE, Status.INPUT_MUTATED):
        assert rec.reason and rec.cases_passed < rec.cases_total
    elif expected is Status.BORROWED_ANSWER:  # the reason names what it reached for
        assert rec.reason.startswith(("imported kbx.", "opened /", "took kbx's import guard")), rec.reason
    elif expected in (Status.IMPORT_ERROR, Status.SYNTAX_ERROR, Status.NO_ENTRY):
        assert not rec.compiled and rec.message
        assert rec.triton_launches == 0
    else:  # runtime_error, crashed, timeout, out_of_memory
        assert rec.reason or rec.message
    if expected is not Status.SYNTAX_ERROR and expected is not Status.TIMEOUT:
        assert rec.output_tail is not None and len(rec.output_tail) <= OUTPUT_TAIL_CHARS


def _params(device: str):
    marks = [pytest.mark.gpu] if device == "gpu" else []
    return [
        pytest.param(e.name, marks=[*marks, *([pytest.mark.xfail(strict=True, reason=e.xfail[device])]
                                              if device in e.xfail else [])])  # fmt: skip
        for e in ENTRIES.values()
        if device in e.devices
    ]


def test_zoo_is_big_enough():
    assert len(ENTRIES) >= 25
    statuses = {e.expect for e in ENTRIES.values()} | {e.expect_gpu for e in ENTRIES.values()}
    assert len(statuses) >= 15, sorted(statuses)


@pytest.mark.parametrize("name", _params("cpu"))
def test_zoo_cpu(name, cpu_records):
    check_entry(ENTRIES[name], cpu_records[name], "cpu")


@pytest.mark.parametrize("name", _params("gpu"))
def test_zoo_gpu(name, gpu_records):
    check_entry(ENTRIES[name], gpu_records[name], "gpu")


# --- no secret leaves the driver, in any record field, in any simple encoding ---------------------


@pytest.mark.parametrize("name", [n for n, e in ENTRIES.items() if "cpu" in e.devices])
def test_no_secret_in_record(name, cpu_records):
    text = json.dumps(cpu_records[name].to_dict())
    for secret in SECRETS.values():
        for form in _forms(secret):
            assert form not in text, f"{name}: a form of a driver secret reached the record"


def test_no_secret_from_ancestor_environment_or_command_line(cpu_run):
    """The sandbox's own PID namespace hides the driver's /proc/<pid>/environ and cmdline (and, as
    a second wall, the driver is non-dumpable and root-run workers are `nobody`)."""
    assert len(cpu_run.exec_env_records) == len(EXEC_ENV_ENTRIES)
    for rec in cpu_run.exec_env_records:
        assert rec["status"] == Status.RUNTIME_ERROR.value and rec["label"] == "exec-env"
        text = json.dumps(rec)
        for secret in [*SECRETS.values(), ARGV_SECRET]:
            for form in _forms(secret):
                assert form not in text, "a form of a driver secret reached the record"


# --- the sandbox: attacks that only the operating system can stop --------------------------------

SANDBOX_ENTRIES = sorted(n for n in ENTRIES if n.startswith("sandbox_"))
BORROW_ENTRIES = sorted(n for n in ENTRIES if n.startswith("borrow_"))  # reach for kbx's own answers


def check_host(run: ZooRun) -> None:
    """Nothing an attack tried is visible from outside the sandbox."""
    host = run.host
    assert host.tasks_digest_after == host.tasks_digest_before, "a task file changed during the run"
    assert host.escape_files == [], "a candidate wrote outside its directory"
    assert host.escapees == [], "a process a candidate started outlived its attempt"
    assert host.connections == 0, "a candidate reached the host's loopback"
    assert host.decoy_state in ("S", "R"), f"another job was signalled: state {host.decoy_state}"


def check_sandbox_records(run: ZooRun) -> None:
    """Every record says the sandbox was on, and no attack reported success. Honest entries
    judged beside the attacks keep their verdicts: test_zoo_* checks them one by one."""
    assert {r.sandbox for r in run.records.values()} == {NAMESPACES}
    for name in SANDBOX_ENTRIES:
        if name in run.records:
            assert "SUCCEEDED" not in run.records[name].output_tail, f"{name}: {run.records[name].output_tail}"
    assert "ATTACK visible processes: 0" in run.records["sandbox_signal_other_jobs"].output_tail
    assert "(0 rewritten)" in run.records["sandbox_rewrite_neighbours"].output_tail
    for name in BORROW_ENTRIES:
        assert "SUCCEEDED" not in run.records[name].output_tail, f"{name}: {run.records[name].output_tail}"
    # With kbx's import guard taken out, the filesystem alone keeps kbx.experts out of reach.
    assert "No module named 'kbx.experts'" in run.records["borrow_guard_removed"].output_tail


def test_zoo_has_an_entry_per_attack_class():
    assert len(SANDBOX_ENTRIES) >= 9, SANDBOX_ENTRIES
    assert len(BORROW_ENTRIES) >= 6, BORROW_ENTRIES


def test_sandbox_holds_on_cpu(cpu_run):
    check_host(cpu_run)
    check_sandbox_records(cpu_run)


@pytest.mark.gpu
def test_sandbox_holds_on_gpu(gpu_run):
    check_host(gpu_run)
    check_sandbox_records(gpu_run)


def test_secret_names_never_reach_the_worker(cpu_records):
    tail = cpu_records["secret_env_stdout"].output_tail
    assert "KBX NAMES: [" in tail and "'KBX_TASKS_DIR'" in tail  # the dump did reach the record...
    for name in SECRETS:
        assert name not in tail  # ...and the secrets were not in the worker's environment at all


def test_secret_in_exception_message(cpu_records):
    rec = cpu_records["secret_env_raise"]
    assert rec.error_type == "RuntimeError" and "KBX_TASKS_DIR" in rec.message


# --- details the statuses promise, on CPU -------------------------------------------------------


def test_partial_output_report(cpu_records):
    rec = cpu_records["partial_output"]
    m = rec.mismatch
    assert (m.case, m.leaf, m.numel) == ("standard", "output", 3737)
    assert m.count == 3737 - 3 * 1024  # exactly the skipped tail block
    assert m.indices[0] == (3 * 1024,) and m.got[0] == 0.0 and m.expected[0] != 0.0
    assert rec.cases_passed == 2  # both fixed cases; every random case fails


def test_hardcoded_fixed_passes_fixed_cases_only(cpu_records):
    rec = cpu_records["hardcoded_fixed"]
    assert rec.mismatch.case == "standard" and rec.cases_passed == 2
    assert rec.mismatch.count == rec.mismatch.numel == 3737


def test_off_by_small_error_size(cpu_records):
    m = cpu_records["off_by_small"].mismatch
    assert m.case == "fixed_small" and m.count == m.numel == 3
    assert m.max_abs_err == pytest.approx(1e-3, rel=1e-3)


def test_monkeypatched_checkers_do_not_reach_the_judge(cpu_records):
    m = cpu_records["monkeypatch_checkers"].mismatch
    assert m.case == "fixed_small" and m.count == 3 and m.got == pytest.approx((7.0, 14.0, 21.0))


def test_failures_name_their_cause(cpu_records):
    r = cpu_records
    assert r["sys_exit_import"].error_type == "SystemExit"
    assert r["import_error"].error_type == "ModuleNotFoundError"
    assert "triton_kernels_that_do_not_exist" in r["import_error"].message
    assert "SIGSEGV" in r["segfault"].reason
    assert "code 0" in r["os_exit_import"].reason
    assert "killed" in r["infinite_loop"].reason
    assert r["runtime_raise"].error_type == "ValueError" and "4096" in r["runtime_raise"].message
    assert r["huge_alloc_python"].error_type == "MemoryError"
    assert r["syntax_error"].error_type == "SyntaxError"
    assert "float64" in r["wrong_dtype"].reason
    assert "(1, 3)" in r["wrong_shape"].reason
    assert "LazyTensor" in r["wrong_type_subclass"].reason
    assert "argument 0" in r["input_mutated"].reason


def test_huge_output_is_truncated(cpu_records):
    tail = cpu_records["ok_huge_print"].output_tail
    assert 0 < len(tail) <= OUTPUT_TAIL_CHARS and "spam" in tail


def test_stochastic_cheats_are_named(cpu_records):
    assert "dropped" in cpu_records["dropout_identity"].reason
    assert "repeats every 256 elements" in cpu_records["dropout_fixed_pattern"].reason


# --- GPU-only details ---------------------------------------------------------------------------


@pytest.mark.gpu
def test_unwritten_tail_is_reported(gpu_records):
    m = gpu_records["gpu_unwritten_empty"].mismatch
    assert m.count == 3737 - 3 * 1024 and m.indices[0] == (3 * 1024,)
    assert all(math.isnan(g) for g in m.got)


@pytest.mark.gpu
def test_timed_records_split_their_time(gpu_records):
    """Every timed attempt reports its timing; each task's baseline is timed once, by one attempt."""
    timed = [r for r in gpu_records.values() if r.timed]
    assert timed and all(r.time_s > 0 and r.gpu_wait_s >= 0 and r.paused_s >= 0 for r in timed)
    assert all(0 < r.save_s < r.time_s and 0 < r.judge_perf_s <= r.judge_s for r in timed)  # the perf outputs' share
    assert all(0 <= r.judge_wait_s < r.judge_s for r in timed)  # waiting for an idle judge is part of judging
    for task in {r.task for r in timed}:
        assert sum(r.baseline_s > 0 for r in gpu_records.values() if r.task == task) == 1, task


@pytest.mark.gpu
def test_running_out_of_gpu_memory_is_charged_only_when_alone(gpu_records):
    """Beside other attempts the memory that ran out may have been theirs (kbx.driver.memory): the attempt
    is redone with the device's memory reserved whole, and only then is the verdict the candidate's."""
    record = gpu_records["huge_alloc_tensor"]
    assert record.status.value == "out_of_memory"
    assert "again with the device's memory to itself" in record.reason


def test_an_unwritten_output_in_the_ghost_replay_is_nan_not_a_stale_value():
    """The ghost replay turns every launch into a no-op, so an honest kernel's output keeps whatever its
    empty tensor held: it must never be a stale value that passes (kbx.sandbox.cases.empty_tensors_filled)."""
    from types import SimpleNamespace

    import torch

    from kbx.sandbox.cases import GHOST_KEY, ghost_replay
    from kbx.tasks.spec import Call

    def unwritten(x):  # what a Triton entry returns when its launch writes nothing
        return torch.empty_like(x)

    x = torch.full((8,), 3.0)
    for _ in range(3):  # a freed block of the same size, holding a right-looking value
        del x
        x = torch.full((8,), 3.0)
    case = SimpleNamespace(name="standard")
    ghost = ghost_replay(unwritten, [(case, None, None)], [{"error": None, "launches": 1, "output": x}],
                         {"standard": (7, Call(args=(x,), kwargs={}))}, SimpleNamespace(ghost=False), "cpu", False)  # fmt: skip
    assert ghost[GHOST_KEY].isnan().all()
    assert not torch.are_deterministic_algorithms_enabled()  # restored for the rest of the worker
