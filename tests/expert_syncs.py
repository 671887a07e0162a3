"""Which experts make the host wait for the GPU: `python -m tests.expert_syncs [TASK_ID ...]` (GPU only).

Each expert is called once at every perf shape of its task after a warm-up call (which compiles, and
fills any per-device cache an expert keeps), the second call under torch's sync debug mode set to raise:
any synchronising CUDA call (`.item()`, a device-to-host copy, a copy from pageable host memory to the
device) then stops the call, and the frame of the expert's own code that made it is reported. Prints one
JSON object, task id -> "SHAPE: file:line" of the first sync (tasks that never sync are left out).

Why it matters (issue 15 (b)): a sync makes a call's time the host's, and this host runs at two speeds,
so the synced experts' timings moved by up to 251 % between two runs where the GPU-bound ones moved 1.7 %.
The tasks are shared out over a pool of WORKERS processes; an error is reported with its task.
"""

from __future__ import annotations

import json
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

WORKERS = 8  # processes at once, each reused for many tasks: the largest perf inputs are a few GiB each
SYNC_RAISES = 2  # torch.cuda.set_sync_debug_mode: 0 off, 1 warn, 2 error
SEED = 0


def first_sync(task_id: str) -> str:
    """The empty string when the expert's calls never synchronise, else "SHAPE: file:line" of its code that did."""
    import torch

    from kbx.tasks.inputs import make_generator
    from kbx.tasks.registry import default_tasks_dir, expert_entry, load_task_id

    info = load_task_id(default_tasks_dir(), task_id)
    entry = expert_entry(info)
    for case in info.spec.perf:
        call = info.spec.make_inputs(case.params, make_generator(SEED, "cuda"), "cuda")
        entry(*call.args, **call.kwargs)  # warm-up: compiling, per-device caches
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode(SYNC_RAISES)
        try:
            entry(*call.args, **call.kwargs)
        except RuntimeError as err:
            if "synchronizing" not in str(err):
                raise
            return f"{case.name}: {expert_frame(err.__traceback__, info.expert_path)}"
        finally:
            torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()
        del call
        torch.cuda.empty_cache()
    return ""


def expert_frame(tb, expert_path: str) -> str:
    """The innermost frame in kbx's own code (the task's expert or kbx/experts/): where the sync was asked for."""
    repo = Path(__file__).resolve().parents[1]
    ours = [f for f in traceback.extract_tb(tb)
            if f.filename == str(Path(expert_path).resolve()) or "/kbx/experts/" in f.filename]  # fmt: skip
    frame = ours[-1] if ours else traceback.extract_tb(tb)[-1]
    name = Path(frame.filename)
    return f"{name.relative_to(repo) if name.is_relative_to(repo) else name}:{frame.lineno}"


def guarded(task_id: str) -> tuple[str, str]:
    try:
        return task_id, first_sync(task_id)
    except Exception as err:  # a failure to run is reported, never taken for "no sync"
        return task_id, f"error: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def main(argv: list[str]) -> None:
    from kbx.tasks import discover

    ids = argv or sorted(t.id for t in discover().values() if t.expert_path)
    with ProcessPoolExecutor(WORKERS, mp_context=get_context("spawn")) as pool:
        found = {task: where for task, where in pool.map(guarded, ids) if where}
    print(json.dumps(found, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
