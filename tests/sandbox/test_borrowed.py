"""kbx's own answers (expert kernels, kbx.experts, methods' code) are out of a candidate's reach, and a
candidate that reaches for them is `borrowed_answer` (kbx.sandbox.answers). The zoo's borrow_*
entries attack with the namespaces sandbox on; here are the guard's rules one by one, kbx's own
expert beside a copy of it, and the guard alone under eval.sandbox=none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import kbx
from kbx.contract.attempt import Attempt
from kbx.core.record import Status
from kbx.driver.evaluator import EvalSettings, Evaluator
from kbx.protocol import SANDBOX_NAMESPACES, SANDBOX_NONE
from kbx.sandbox import answers
from kbx.tasks import discover

TESTS = Path(__file__).parents[1]  # tests/, above this file's folder
ZOO = TESTS / "zoo"
FIXTURE_TASKS = TESTS / "fixtures" / "tasks"
COPIED_EXPERT = "Reduce/argmax"  # its expert imports kbx.experts.argreduce


@pytest.fixture
def view(tmp_path: Path) -> answers.KbxView:
    """A checkout in tmp_path: a kbx package with the worker's parts and the experts, tasks, a git store."""
    for part in ("core/record.py", "sandbox/cases.py", "experts/lu.py", "methods/inductor.py", "__init__.py", "run.py"):
        (tmp_path / "kbx" / part).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "kbx" / part).write_text("")
    for name in ("task.py", "expert.py", "__pycache__/task.cpython-311.pyc", "__pycache__/expert.cpython-311.pyc"):
        (tmp_path / "tasks" / "Math" / "add" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tasks" / "Math" / "add" / name).write_text("")
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    places = (str(tmp_path / ".git"), str(tmp_path / "tasks"))
    return answers.KbxView(str(tmp_path / "kbx"), answers.WORKER_PARTS, places)


def test_a_candidate_imports_no_kbx_module_outside_the_workers_parts(view):
    guard = answers.Guard(view, lambda reason: None)
    for name in ("kbx.experts", "kbx.experts.lu", "kbx.methods.inductor", "kbx.run", "kbx.driver.evaluator"):
        assert guard.module_refusal(name) == f"imported {name}: kbx's own code, not the candidate's"
    for name in ("kbx", "kbx.sandbox.cases", "kbx.core.record", "kbx.protocol", "kbxother", "torch", None):
        assert guard.module_refusal(name) == ""
    expert = answers.Guard(answers.KbxView(view.package, answers.WORKER_PARTS + answers.EXPERT_PARTS, view.places),
                           lambda reason: None)  # fmt: skip
    assert expert.module_refusal("kbx.experts.lu") == "" and expert.module_refusal("kbx.methods") != ""


def test_a_candidate_opens_no_answer_file(view, tmp_path, monkeypatch):
    guard = answers.Guard(view, lambda reason: None)
    refused = ["kbx/experts/lu.py", "kbx/methods/inductor.py", "kbx/run.py", "tasks/Math/add/expert.py",
               "tasks/Math/add/__pycache__/expert.cpython-311.pyc", ".git/objects", "tasks"]  # fmt: skip
    for rel in refused:
        reason = guard.path_refusal(str(tmp_path / rel))
        assert reason == f"opened {tmp_path / rel}: kbx's own answers, not the candidate's"
    allowed = ["kbx/core/record.py", "kbx/sandbox/cases.py", "kbx/__init__.py", "kbx", "tasks/Math/add/task.py",
               "tasks/Math/add/__pycache__/task.cpython-311.pyc", "elsewhere.py"]  # fmt: skip
    for rel in allowed:
        assert guard.path_refusal(str(tmp_path / rel)) == "", rel
    (tmp_path / "innocent.py").symlink_to(tmp_path / "kbx" / "experts" / "lu.py")
    monkeypatch.chdir(tmp_path / "kbx")
    for alias in (str(tmp_path / "innocent.py"), "experts/lu.py", b"experts/lu.py", Path("experts/lu.py"),
                  "core/../experts/lu.py"):  # fmt: skip
        assert guard.path_refusal(alias).startswith(f"opened {tmp_path / 'kbx' / 'experts' / 'lu.py'}"), alias
    assert guard.path_refusal(3) == ""  # a descriptor: what it names was checked when it was opened


def test_the_first_try_is_reported_and_every_try_refused(view, tmp_path):
    reports = []
    guard = answers.Guard(view, reports.append)
    for _ in range(2):
        with pytest.raises(ImportError, match="kbx.experts.lu is kbx's own code"):
            guard.find_spec("kbx.experts.lu")
        with pytest.raises(PermissionError):
            guard._audit("open", (str(tmp_path / "tasks" / "Math" / "add" / "expert.py"), "r", 0))
    assert reports == ["imported kbx.experts.lu: kbx's own code, not the candidate's"]
    assert guard.find_spec("kbx.sandbox.cases") is None  # left to the next finder


def test_the_view_follows_the_package_that_runs_and_hides_its_checkouts_answers():
    view = answers.kbx_view(str(FIXTURE_TASKS), False)
    root = os.path.dirname(view.package)
    assert view.package == os.path.realpath(os.path.dirname(kbx.__file__))
    assert "experts" not in view.parts and "experts" in answers.kbx_view(str(FIXTURE_TASKS), True).parts
    assert os.path.realpath(FIXTURE_TASKS) in view.places
    if os.path.isdir(os.path.join(root, "tasks")):
        assert os.path.join(root, "tasks") in view.places
    if answers.git_store(root):
        assert answers.git_store(root) in view.places
    assert {os.path.basename(p) for p in view.part_paths()} == set(answers.WORKER_PARTS)


def test_a_worktrees_git_store_is_the_main_checkouts(tmp_path):
    main = tmp_path / "main" / ".git"
    (main / "worktrees" / "wt").mkdir(parents=True)
    (main / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {main / 'worktrees' / 'wt'}\n")
    assert answers.git_store(str(tmp_path / "wt")) == str(main)
    assert answers.git_store(str(tmp_path / "main")) == str(main)
    assert answers.git_store(str(tmp_path)) == ""


def test_kbx_own_expert_may_use_kbx_experts_and_a_copy_of_it_may_not():
    """Reduce/argmax's expert imports kbx.experts.argreduce: judged as kbx's expert (method=reference)
    it is correct; the same text submitted as any other code (a prediction) borrows kbx's answer."""
    task = discover()[COPIED_EXPERT]
    code = Path(task.expert_path).read_text()
    with Evaluator(EvalSettings(workers=2, sandbox=SANDBOX_NAMESPACES)) as ev:
        expert, copied = ev.evaluate([Attempt(task, code, "expert", expert=True), Attempt(task, code, "copied")])
    assert expert.status is Status.OK, expert.reason
    assert copied.status is Status.BORROWED_ANSWER and not copied.correct
    assert copied.reason == "imported kbx.experts.argreduce: kbx's own code, not the candidate's"


def test_without_the_sandbox_the_guard_alone_refuses_and_names_the_borrowing(tmp_path, monkeypatch):
    """eval.sandbox=none: no filesystem wall, so the answers are there to read; the guard refuses the
    imports and opens that go through Python and says so in the record."""
    tasks_dir = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS, tasks_dir)
    monkeypatch.setenv("KBX_TASKS_DIR", str(tasks_dir))
    tasks = discover(str(tasks_dir))
    names = ("borrow_read_files", "borrow_worker_registry", "borrow_guard_removed")
    with Evaluator(EvalSettings(workers=2, sandbox=SANDBOX_NONE, tasks_dir=str(tasks_dir))) as ev:
        records = ev.evaluate([Attempt(tasks["Math/zoo_scale_add"], (ZOO / f"{n}.py").read_text(), n) for n in names])
    for record in records:
        assert record.status is Status.BORROWED_ANSWER and record.sandbox == SANDBOX_NONE, (record.label, record.reason)
        assert "SUCCEEDED" not in record.output_tail, record.output_tail
    read, registry, removed = (r.reason for r in records)
    checkout_expert = os.path.realpath(Path(kbx.__file__).parents[1] / "tasks" / "Math" / "add" / "expert.py")
    assert read == f"opened {checkout_expert}: kbx's own answers, not the candidate's"
    assert registry.startswith(f"opened {os.path.realpath(tasks_dir / 'Math' / 'zoo_scale_add')}")
    assert removed.startswith(f"opened {os.path.realpath(Path(kbx.__file__).parent / 'experts')}")
