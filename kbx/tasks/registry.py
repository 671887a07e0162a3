"""Task discovery by convention: `tasks/<Category>/<stem>/task.py` defines `TASK`.

The id is `Category/stem`, upstream's identifier. An optional `expert.py` beside it is kbx's
expert Triton kernel for the task. Discovery imports every task module and validates it;
any malformed or duplicate task is an error that names the file, never a silent skip.

Dtype variants: a task module may also define `VARIANTS`, a list of further Tasks (the same
operation in other dtypes, e.g. `gelu_bf16` beside `gelu`), so their shared reference, input
builder and cost models are written once. A variant's id is `Category/<its entry>`, and that entry
must be `<folder>_<suffix>` (suffix: lowercase letters and digits, e.g. `bf16`), so its folder is
found from its id alone (`load_task_id`). The folder's `expert.py` serves every variant: it defines
each variant's entry.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import keyword
import os
import re
from pathlib import Path

from kbx.core.errors import TaskError
from kbx.tasks.spec import CASE_KINDS, CATEGORIES, PERF, Task, TaskInfo

TASK_FILE = "task.py"
EXPERT_FILE = "expert.py"
MIN_PERF_SHAPES, MAX_PERF_SHAPES = 3, 5
DIGEST_CHARS = 16
VARIANTS_NAME = "VARIANTS"
VARIANT_SUFFIX = re.compile(r"[a-z0-9]+")
KNOWN_DTYPES = {
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "int8", "uint8", "int16", "int32", "int64", "bool",
}  # fmt: skip



def default_tasks_dir() -> Path:
    """`$KBX_TASKS_DIR`, else the `tasks/` folder of the kbx checkout."""
    env = os.environ.get("KBX_TASKS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "tasks"


@functools.lru_cache(maxsize=4)
def discover(tasks_dir: str | None = None) -> dict[str, TaskInfo]:
    """Load and validate every task under `tasks_dir`; returns {id: TaskInfo} sorted by id."""
    root = Path(tasks_dir) if tasks_dir else default_tasks_dir()
    if not root.is_dir():
        raise TaskError(f"tasks directory not found: {root}")
    found: dict[str, TaskInfo] = {}
    seen_lower: dict[str, str] = {}
    for category_dir in sorted(p for p in root.iterdir() if not p.name.startswith((".", "_"))):
        if not category_dir.is_dir():
            raise TaskError(f"{category_dir}: expected a category folder, found a file")
        if category_dir.name not in CATEGORIES:
            raise TaskError(f"{category_dir}: unknown category {category_dir.name!r}; valid: {', '.join(CATEGORIES)}")
        for task_dir in sorted(p for p in category_dir.iterdir() if not p.name.startswith((".", "_"))):
            if only_bytecode(task_dir):
                continue  # a folder git left behind (a task folded into another keeps its bytecode cache)
            for info in load_folder(task_dir, category_dir.name):
                if info.id.lower() in seen_lower:
                    raise TaskError(f"{task_dir}: duplicate task id {info.id!r} (also {seen_lower[info.id.lower()]})")
                seen_lower[info.id.lower()] = info.id
                found[info.id] = info
    return dict(sorted(found.items()))


def only_bytecode(folder: Path) -> bool:
    """A folder holding nothing but Python's bytecode cache: what git leaves of a removed task
    folder (one folded into another as a dtype variant), never a task."""
    return folder.is_dir() and all(p.name == "__pycache__" for p in folder.iterdir())


def load_task_id(tasks_dir: str | Path, task_id: str) -> TaskInfo:
    """One task by its id, importing only its own folder (for the evaluator's workers and judges).

    `Category/stem` is the folder `Category/stem`; where no such folder exists, the stem is a dtype
    variant `<folder>_<suffix>` declared in `Category/<folder>`'s `VARIANTS`.
    """
    category, _, stem = task_id.partition("/")
    folder = Path(tasks_dir) / category / stem
    if (not folder.is_dir() or only_bytecode(folder)) and "_" in stem:
        folder = folder.with_name(stem.rsplit("_", 1)[0])
    for info in load_folder(folder, category):
        if info.id == task_id:
            return info
    raise TaskError(f"{folder / TASK_FILE}: declares no task {task_id!r}")


def load_folder(task_dir: Path, category: str) -> list[TaskInfo]:
    """The tasks one folder declares: its `TASK`, then its dtype `VARIANTS` in the order listed."""
    task_file = task_dir / TASK_FILE
    if not task_dir.is_dir() or not task_file.is_file():
        raise TaskError(f"{task_dir}: a task is a folder holding {TASK_FILE}")
    module_name = "kbx_task__" + f"{category}/{task_dir.name}".replace("/", "__")
    spec = importlib.util.spec_from_file_location(module_name, task_file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a broken task file must name itself, whatever it raised
        raise TaskError(f"{task_file}: failed to import: {type(exc).__name__}: {exc}") from exc
    task = getattr(module, "TASK", None)
    if not isinstance(task, Task):
        raise TaskError(f"{task_file}: must define TASK = kbx.tasks.Task(...)")
    validate(task, task_file)
    expert = task_dir / EXPERT_FILE
    digest = file_digest(task_file)

    def info(stem: str, spec: Task) -> TaskInfo:
        return TaskInfo(id=f"{category}/{stem}", category=category, stem=stem, path=str(task_file),
                        expert_path=str(expert) if expert.is_file() else "", spec=spec, digest=digest)  # fmt: skip

    return [info(task_dir.name, task), *(info(v.entry, v) for v in variants(module, task_dir.name, task_file))]


def expert_entry(info: TaskInfo):
    """The task's expert function, its `expert.py` loaded as a module of its own (for the scripts and tests
    that call an expert directly; the evaluator runs it as a candidate, in a worker)."""
    if not info.expert_path:
        raise TaskError(f"{info.id}: has no {EXPERT_FILE}")
    spec = importlib.util.spec_from_file_location("kbx_expert__" + info.id.replace("/", "__"), info.expert_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, info.spec.entry)


def variants(module, folder: str, task_file: Path) -> list[Task]:
    """The module's validated `VARIANTS` (none when it defines none)."""
    declared = getattr(module, VARIANTS_NAME, [])
    if not isinstance(declared, (list, tuple)) or not all(isinstance(v, Task) for v in declared):
        raise TaskError(f"{task_file}: {VARIANTS_NAME} must be a list of kbx.tasks.Task(...)")
    for v in declared:
        where = f"{task_file} ({VARIANTS_NAME}: {v.entry})"
        prefix, _, suffix = v.entry.rpartition("_")
        if prefix != folder or not VARIANT_SUFFIX.fullmatch(suffix):
            raise TaskError(f"{where}: a variant's entry is its task's stem and must be {folder}_<suffix>, "
                            f"the suffix of lowercase letters and digits (e.g. {folder}_bf16)")  # fmt: skip
        validate(v, where)
    return list(declared)


def file_digest(path: Path) -> str:
    """What `TaskInfo.digest` holds: a change to the file between two loads shows in it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:DIGEST_CHARS]


def validate(task: Task, where: Path | str) -> None:
    """Raise TaskError naming the first rule a task breaks."""

    def fail(msg: str) -> None:
        raise TaskError(f"{where}: {msg}")

    if not task.entry.isidentifier() or keyword.iskeyword(task.entry):
        fail(f"entry {task.entry!r} is not a Python identifier")
    if not task.description.strip() or not task.signature.strip():
        fail("description and signature must be non-empty")
    if not task.dtypes or set(task.dtypes) - KNOWN_DTYPES:
        fail(f"dtypes {list(task.dtypes)} must be non-empty and among {sorted(KNOWN_DTYPES)}")
    if not isinstance(task.version, int) or task.version < 1:
        fail(f"version must be a positive int, got {task.version!r}")
    if not task.cases:
        fail("needs at least one correctness case")
    if not MIN_PERF_SHAPES <= len(task.perf) <= MAX_PERF_SHAPES:
        fail(f"needs {MIN_PERF_SHAPES}-{MAX_PERF_SHAPES} perf shapes, has {len(task.perf)}")
    names = [c.name for c in [*task.cases, *task.perf]]
    if len(set(names)) != len(names):
        fail(f"case names must be unique: {names}")
    for case in task.cases:
        if case.kind not in CASE_KINDS or case.kind == PERF:
            fail(f"case {case.name!r} has kind {case.kind!r}; correctness cases are fixed, standard or outlier")
    for case in task.perf:
        if case.kind != PERF:
            fail(f"perf shape {case.name!r} must have kind 'perf'")
    for fn in ("reference", "make_inputs", "flops", "bytes"):
        if not callable(getattr(task, fn)):
            fail(f"{fn} must be callable")


def select(tasks: dict[str, TaskInfo], ids: list[str] | None = None, category: str = "all") -> list[TaskInfo]:
    """Tasks by id list and/or category (case-insensitive); unknown names list the valid ones."""
    chosen = list(tasks.values())
    if category and category.lower() != "all":
        by_lower = {c.lower(): c for c in CATEGORIES}
        if category.lower() not in by_lower:
            raise TaskError(f"unknown category {category!r}; valid: all, {', '.join(CATEGORIES)}")
        chosen = [t for t in chosen if t.category == by_lower[category.lower()]]
    if ids:
        unknown = [i for i in ids if i not in tasks]
        if unknown:
            raise TaskError(f"unknown task(s) {', '.join(unknown)}; see `python -m kbx.quality` for the list")
        wanted = set(ids)
        chosen = [t for t in chosen if t.id in wanted]
    return chosen
