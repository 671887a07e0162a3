"""What of kbx a candidate may reach: the parts its worker runs on, never kbx's own answers.

kbx holds answers to its tasks: the expert kernels (`tasks/*/*/expert.py`), the Triton pieces they
share (kbx.experts), and code that writes kernels (kbx.methods: torch.compile of the reference, the
LLM loops). A candidate that imports or reads them hands in kbx's work as its own. Two walls keep
them out of its reach:

- the filesystem (the namespaces sandbox, kbx.sandbox.namespaces.build_view): the kbx package the
  worker runs, wherever it is installed, shows WORKER_PARTS alone; the checkouts' tasks folders and
  git stores (which hold every expert) and any other installed copy of the package are hidden;
- the worker itself (either sandbox mode): a Guard, installed just before the candidate is
  imported, refuses kbx modules outside those parts (a meta path finder, for every import route)
  and the opening of answer files (an audit hook, which Python cannot remove), and reports the
  first try at once on the event pipe, so the record says `borrowed_answer` whatever the candidate
  does next (catches the error, crashes, hangs).

kbx's own expert kernels (`Attempt.expert`: method=reference, the benchmarks) also see kbx.experts.
Everything the worker imports after the sandbox is entered lies in WORKER_PARTS (kbx.sandbox.child).
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import os
import sys
from collections.abc import Callable
from urllib.parse import unquote, urlparse

import kbx

# Entries of the kbx package a candidate's worker needs: the layers below the driver.
WORKER_PARTS = ("__init__.py", "protocol.py", "core", "tasks", "contract", "sandbox")
EXPERT_PARTS = ("experts",)  # the Triton pieces expert kernels share, for kbx's own experts alone
# A task's statement (the prompt quotes its reference) is no answer, and the worker runs its code after
# the candidate is imported (perf inputs, byte models): a warning or traceback from it is read through
# linecache. The guard lets it be opened; the namespaces sandbox hides it with its folder all the same.
TASK_FILE = "task.py"
TASK_BYTECODE_PREFIX = "task."  # its bytecode under __pycache__


@dataclasses.dataclass(frozen=True)
class KbxView:
    """The kbx package as a candidate sees it, and the places that hold kbx's answers (all real paths)."""

    package: str  # the package the worker runs
    parts: tuple[str, ...]  # its entries shown: files and folders directly in `package`
    places: tuple[str, ...]  # hidden whole: tasks folders, git stores, other copies of the package

    def part_paths(self) -> list[str]:
        return [p for p in (os.path.join(self.package, part) for part in self.parts) if os.path.exists(p)]


def package_dir() -> str:
    return os.path.realpath(os.path.dirname(kbx.__file__))


@functools.lru_cache(maxsize=8)
def kbx_view(tasks_dir: str, expert: bool) -> KbxView:
    """The view for a job judging against `tasks_dir`; `expert` for kbx's own expert kernels."""
    package = package_dir()
    parts = WORKER_PARTS + (EXPERT_PARTS if expert else ())
    copies = {c for c in _installed_packages() if c != package}
    roots = {os.path.dirname(package), *(os.path.dirname(c) for c in copies)}
    places = {*copies, *(os.path.join(r, "tasks") for r in roots), *filter(None, map(git_store, roots)),
              os.path.realpath(tasks_dir)}  # fmt: skip
    return KbxView(package, parts, tuple(sorted(p for p in places if os.path.isdir(p))))


def _installed_packages() -> list[str]:
    """Where the installed kbx distribution keeps its package: the project's folder for an editable
    install (PEP 610's direct_url.json; setuptools' editable finder is no sys.path entry, so nothing
    else names it), site-packages for a wheel. PYTHONPATH may have the worker run another copy."""
    import importlib.metadata as md

    try:
        dist = md.distribution("kbx")
    except md.PackageNotFoundError:
        return []
    found = [str(dist.locate_file("kbx"))]
    try:
        url = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        url = {}
    if url.get("dir_info", {}).get("editable") and url.get("url", "").startswith("file:"):
        found.append(os.path.join(unquote(urlparse(url["url"]).path), "kbx"))
    return [os.path.realpath(p) for p in found if os.path.isdir(os.path.join(p, "sandbox"))]


def git_store(root: str) -> str:
    """The git store of a checkout at `root` ("" if none): `.git`, or for a worktree (`.git` a file
    naming its folder under the main store) the main store, whose objects hold every expert."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return os.path.realpath(dot_git)
    try:
        with open(dot_git) as f:
            gitdir = f.read().strip().removeprefix("gitdir:").strip()
        gitdir = os.path.join(root, gitdir)
        with open(os.path.join(gitdir, "commondir")) as f:
            return os.path.realpath(os.path.join(gitdir, f.read().strip()))
    except OSError:
        return ""


def under(path: str, parent: str) -> bool:
    """`path` is `parent` or inside it (both real paths)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


class Guard:
    """Refuses a candidate's imports of kbx modules outside its view and its opening of answer files,
    reporting the first try (`report(reason)`); installed in the worker just before the candidate."""

    def __init__(self, view: KbxView, report: Callable[[str], None]) -> None:
        self.view = view
        self.modules = {part.removesuffix(".py") for part in view.parts}
        self.report = report
        self.reported = False

    def install(self) -> None:
        sys.meta_path.insert(0, self)
        sys.addaudithook(self._audit)

    def check_in_place(self) -> None:
        """Report a candidate that took the guard out of sys.meta_path (to import past it)."""
        if self not in sys.meta_path:
            self._refused("took kbx's import guard out of sys.meta_path")

    def find_spec(self, name: str, path=None, target=None):
        """importlib's meta path finder protocol: refuses, or leaves the import to the next finder."""
        self._check_module(name)
        return None

    def _audit(self, event: str, args: tuple) -> None:
        if event == "import":  # the import statement's route, raised even with this finder removed
            self._check_module(args[0])
        elif event == "open":
            self._check_path(args[0])

    def _check_module(self, name) -> None:
        reason = self.module_refusal(name)
        if reason:
            self._refused(reason)
            raise ImportError(f"{name} is kbx's own code, out of a candidate's reach", name=name)

    def _check_path(self, path) -> None:
        reason = self.path_refusal(path)
        if reason:
            self._refused(reason)
            raise PermissionError(errno.EACCES, "kbx's own answers are out of a candidate's reach", str(path))

    def _refused(self, reason: str) -> None:
        if not self.reported:
            self.reported = True
            self.report(reason)

    def module_refusal(self, name) -> str:
        """Why importing module `name` borrows an answer ("" if it does not)."""
        if not isinstance(name, str):
            return ""
        top, _, rest = name.partition(".")
        if top != "kbx" or not rest or rest.partition(".")[0] in self.modules:
            return ""
        return f"imported {name}: kbx's own code, not the candidate's"

    def path_refusal(self, path) -> str:
        """Why opening `path` borrows an answer ("" if it does not): a kbx package entry outside the
        view, or anything in an answer place but a task's statement."""
        full = _real(path)
        if not full:
            return ""
        view = self.view
        if under(full, view.package) and full != view.package:
            if full[len(view.package) + 1 :].split("/", 1)[0] in view.parts:
                return ""
        elif not any(under(full, place) for place in view.places) or _statement(full):
            return ""
        return f"opened {full}: kbx's own answers, not the candidate's"


def _real(path) -> str:
    """The real absolute path an open() of `path` names; "" for a descriptor or what is no path."""
    try:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return ""
        return os.path.realpath(os.path.join(os.getcwd(), path))
    except (OSError, ValueError, TypeError):  # an audit hook that raises would fail the open itself
        return ""


def _statement(path: str) -> bool:
    name = os.path.basename(path)
    if os.path.basename(os.path.dirname(path)) == "__pycache__":
        return name.startswith(TASK_BYTECODE_PREFIX)
    return name == TASK_FILE
