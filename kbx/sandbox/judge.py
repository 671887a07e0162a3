"""The judge: a long-lived trusted process per device that owns references and verdicts.

It never imports candidate code, so it can be reused for the whole run and keep reference
outputs cached (per task version, case, seed and device). Protocol, JSON lines: one request on
stdin, one reply on the protocol fd (the original stdout):
    {"op": "compare", "task": "Cat/stem", "seeds": {case: [seed, ...]}, "outputs": PATH}
        -> a Verdict as a dict
    {"op": "compare_perf", "task": ..., "rows": [...], "outputs": PATH} -> a Verdict on the timed outputs
    {"op": "baseline_prepare", "task": ..., "shape": S, "timing": {...}} -> {"estimate_ms": E}
    {"op": "baseline_measure", "shape": S, "energy": bool} -> {"row": {...}}   (the reference timed on
        the GPU, as kbx.sandbox.timing times a candidate: prepared while the GPU is shared, measured
        in the exclusive window the driver holds)
    {"op": "quiet", "timing": {...}} -> {"quiet": bool, "wait_ms": W}   (the timer, in a window with
        everyone else frozen: whether the GPU goes quiet, kbx.sandbox.timing.wait_until_quiet)
    {"op": "load", "outputs": PATH, "mmap": bool} -> {"ok": true}   read the file for the next compare
        (CPU only, so the driver sends it without holding the GPU); with mmap, map it instead of
        copying it: only once its writer, the worker, has exited
    {"op": "ping"} -> {"ok": true, "startup_s": {phase: seconds}}   (what its start-up took: warm_up)
Any failure of kbx's own code answers {"error": "..."}; a failing reference answers a
`reference_error` verdict.
"""

from __future__ import annotations

import collections
import faulthandler
import json
import os
import signal
import sys
import time
import traceback

from kbx.protocol import JudgeOp
from kbx.sandbox.process_exit import exit_at_once

MAX_CACHED_TASKS = 4  # reference outputs (perf shapes' excepted) of this many tasks stay cached (LRU), per judge
WARMUP_SIDE = 64  # the warm-up's tensors are WARMUP_SIDE x WARMUP_SIDE: small, yet every library handle is made


class Judge:
    def __init__(self, device: str, tasks_dir: str) -> None:
        self.device = device
        self.tasks_dir = tasks_dir
        self.tasks: dict = {}
        self.refs: collections.OrderedDict = collections.OrderedDict()  # task key -> {(case, seed): output}
        self.loaded: tuple = ("", None)  # (path, payload or the exception reading it), for the next compare
        self.prepared = None  # the baseline shape prepared for the next baseline_measure
        self.startup_s: dict[str, float] = {}  # what start-up took, by phase (main, warm_up)

    def task(self, task_id: str, digest: str = ""):
        """The task as first loaded by this judge; refused when that is not the file the driver
        loaded (`digest`: kbx.tasks.registry.file_digest), e.g. a file edited during the run."""
        if task_id not in self.tasks:
            from kbx.tasks.registry import load_task_id

            self.tasks[task_id] = load_task_id(self.tasks_dir, task_id)
        info = self.tasks[task_id]
        if digest and info.digest != digest:
            raise RuntimeError(f"the task file {info.path} is not the one the driver loaded (digest {info.digest}, "
                               f"the driver's {digest}): it changed during the run")  # fmt: skip
        return info

    def expected(self, info, case, seed: int):
        import torch

        from kbx.contract.compare import EXCEPTION_KEY
        from kbx.sandbox.cases import to_plain, with_state
        from kbx.tasks.inputs import make_generator
        from kbx.tasks.spec import PERF

        key = (info.id, info.spec.version, self.device)
        per_task = self.refs.setdefault(key, {})
        self.refs.move_to_end(key)
        while len(self.refs) > MAX_CACHED_TASKS:
            self.refs.popitem(last=False)
        if (case.name, seed) not in per_task:
            call = info.spec.make_inputs(case.params, make_generator(seed, self.device), self.device)
            try:
                with torch.no_grad():
                    out = info.spec.reference(*call.args, **call.kwargs)
                if info.spec.inplace:
                    out = with_state(out, call.args, call.kwargs)
                out = to_plain(out, device=self.device)
            except Exception as exc:  # the reference raising is part of the task (compared by type)
                out = {EXCEPTION_KEY: type(exc).__name__}
            if case.kind == PERF:  # GBs on the device: recomputed (milliseconds) rather than kept
                return out
            per_task[(case.name, seed)] = out
        return per_task[(case.name, seed)]

    def handle(self, req: dict) -> dict:
        op = req.get("op")
        if op == JudgeOp.PING:
            return {"ok": True, "startup_s": self.startup_s}
        if op == JudgeOp.LOAD:
            self.loaded = (req["outputs"], self.read(req["outputs"], mmap=bool(req.get("mmap"))))
            return {"ok": True}
        if op == JudgeOp.COMPARE:
            return self.compare(req)
        if op == JudgeOp.COMPARE_PERF:
            return self.compare_perf(req)
        if op == JudgeOp.BASELINE_PREPARE:
            return self.baseline_prepare(req)
        if op == JudgeOp.BASELINE_MEASURE:
            return self.baseline_measure(req)
        if op == JudgeOp.QUIET:
            from kbx.contract.timing_policy import TimingPolicy
            from kbx.sandbox.timing import wait_until_quiet

            quiet, wait_ms = wait_until_quiet(TimingPolicy(**req["timing"]))
            return {"quiet": quiet, "wait_ms": wait_ms}
        return {"error": f"unknown op {op!r}"}

    def baseline_prepare(self, req: dict) -> dict:
        from kbx.contract.timing_policy import TimingPolicy
        from kbx.sandbox.timing import prepare_shape

        info = self.task(req["task"], req.get("digest", ""))
        case = next(c for c in info.spec.perf if c.name == req["shape"])
        self.prepared = None  # the previous shape's inputs go before this one's are made
        policy = TimingPolicy(**req["timing"])
        self.prepared = (req["task"], req["shape"], policy, prepare_shape(_no_grad(info.spec.reference), info, case,
                                                                         self.device, policy, check=False))  # fmt: skip
        return {"estimate_ms": self.prepared[3].row["estimate_ms"]}

    def baseline_measure(self, req: dict) -> dict:
        from kbx.sandbox.timing import measure_shape

        if self.prepared is None or self.prepared[:2] != (req["task"], req["shape"]):
            return {"error": f"baseline_measure of {req['task']} {req['shape']} without its baseline_prepare"}
        _, _, policy, prepared = self.prepared
        self.prepared = None
        row, _ = measure_shape(prepared, policy, energy=bool(req.get("energy")), check=False)
        row["samples_ms"] = []  # kept in the worker's rows only; the baseline's summary is enough here
        return {"row": row}

    def compare(self, req: dict) -> dict:
        """Verdict on the correctness cases (the worker's outputs.pt)."""
        from kbx.sandbox.judging import judge_outputs

        seeds = {name: [int(s) for s in case_seeds] for name, case_seeds in req["seeds"].items()}
        return self._judge_file(req, lambda info, payload, expected: judge_outputs(info, payload, seeds, self.device,
                                                                                   expected))  # fmt: skip

    def compare_perf(self, req: dict) -> dict:
        """Verdict on the outputs of the last timed call at every perf shape (perf_outputs.pt)."""
        from kbx.sandbox.judging import judge_perf_outputs

        return self._judge_file(req, lambda info, payload, expected: judge_perf_outputs(info, payload, req["rows"],
                                                                                        self.device, expected))  # fmt: skip

    def _judge_file(self, req: dict, judge) -> dict:
        from kbx.core.record import Status
        from kbx.sandbox.judging import Verdict

        info = self.task(req["task"], req.get("digest", ""))
        path, payload = self.loaded
        self.loaded = ("", None)
        if path != req["outputs"]:
            payload = self.read(req["outputs"])
        if isinstance(payload, Exception):
            return Verdict(Status.CRASHED, f"unreadable outputs file: {type(payload).__name__}: {payload}").to_dict()
        return judge(info, payload, lambda c, s: self.expected(info, c, s)).to_dict()

    @staticmethod
    def read(path: str, mmap: bool = False):
        """A worker's outputs file as data, or the exception that reading it raised. Mapped (`mmap`),
        the tensors are read from the page cache as they are moved to the device: an H100 judge
        loaded 7 GB of perf outputs onto the GPU in 1.2 s, against 6.1 s copied first."""
        import torch

        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        except Exception as exc:  # a candidate can leave anything in its outputs file
            return exc


def warm_up(device: str) -> dict[str, float]:
    """Make, before the first request, what a judge's first request on a GPU would make: the CUDA
    context, a CUDA generator's state, cuBLAS's handle, the comparison's kernels, so that they
    overlap the candidates' compiling. On an H100 they take 0.7-0.9 s together (docs/BENCHMARKS.md,
    2026-11-28), which is not what makes a run's first verdicts slow (10 s against 1 s later).
    Seconds per phase, for the driver's report."""
    if not device.startswith("cuda"):
        return {}
    import torch

    from kbx.contract.compare import compare
    from kbx.tasks.inputs import make_generator
    from kbx.tasks.spec import Tolerance

    phases: dict[str, float] = {}

    def timed(name: str, fn):
        started = time.perf_counter()
        out = fn()
        torch.cuda.synchronize(device)
        phases[name] = time.perf_counter() - started
        return out

    timed("cuda_context_s", lambda: torch.zeros(1, device=device))
    x = timed("generator_s", lambda: torch.randn(WARMUP_SIDE, WARMUP_SIDE, generator=make_generator(0, device),
                                                 device=device))  # fmt: skip
    y = timed("matmul_s", lambda: (x @ x, x.bfloat16() @ x.bfloat16()))[0]
    timed("compare_s", lambda: compare(y, y.clone(), Tolerance()))
    torch.cuda.empty_cache()
    return phases


def _no_grad(fn):
    def call(*args, **kwargs):
        import torch

        with torch.no_grad():
            return fn(*args, **kwargs)

    return call


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints (torch warnings, task code) must not corrupt the protocol
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks into the log, for Evaluator.dump_stacks
    started = time.perf_counter()
    import torch  # noqa: F401 - imported before the first answer, so request deadlines time requests, not start-up

    import kbx.sandbox.judging  # noqa: F401

    judge = Judge(os.environ.get("KBX_DEVICE", "cpu"), os.environ["KBX_TASKS_DIR"])
    judge.startup_s["import_s"] = time.perf_counter() - started
    judge.startup_s.update(warm_up(judge.device))
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = judge.handle(json.loads(line))
        except Exception as exc:  # report and keep serving: one bad request must not end the run
            reply = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=-5)}
        release_gpu_memory(judge.device)
        protocol.write(json.dumps(reply) + "\n")
    protocol.flush()
    exit_at_once()


def release_gpu_memory(device: str) -> None:
    """Hand the blocks a request freed back to the driver: a judge's caching allocator would
    otherwise keep its peak (a perf shape's inputs, GBs) reserved while the workers run short."""
    if device.startswith("cuda") and "torch" in sys.modules:
        import torch

        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
