"""The zygote: a pre-imported process that forks one fresh child per candidate.

Importing torch and triton takes seconds; forking a process that already has them takes
milliseconds. The zygote never initialises CUDA (a CUDA context does not survive fork), never
imports candidate code, and is single-threaded so that fork is safe.

Protocol, JSON lines. Driver -> zygote on stdin:
    {"op": "spawn", "job": {...}}        fork a child for the job
    {"op": "send", "id": ID, "text": T}  write T to the child's control pipe (e.g. "time")
    {"op": "kill", "id": ID}             SIGKILL the child's process group
    {"op": "signal", "id": ID, "signum": N}  send signal N to the child (pids are the zygote's own)
    {"op": "freeze", "token": T}         stop every child's whole process tree (kbx.sandbox.freezer);
                 answer "frozen"
    {"op": "release", "id": ID}          continue that child's own process (not its descendants)
                 after a freeze that stopped it
    {"op": "thaw"}                       continue what the last freeze stopped
    {"op": "trees", "token": T}          report every child's process tree (pids as the zygote sees them)
Zygote -> driver on its protocol fd (the original stdout):
    {"id": ID, "event": "spawned", "pid": P}
    {"id": ID, "event": <child event>, ...}   relayed from the child's result pipe
    {"id": ID, "event": "exit", "code": C, "signal": S}
    {"id": "", "event": "frozen", "token": T, "processes": N}
    {"id": "", "event": "trees", "token": T, "trees": {ID: [pid, ...]}}   children in the order spawned
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import sys

from kbx.protocol import INTERPRETER_ENV, SANDBOX_ENV, SANDBOX_NAMESPACES, Event, ZygoteOp
from kbx.sandbox import freezer, interpreter
from kbx.sandbox.namespaces import IsolatedForker, view_plan
from kbx.sandbox.process_exit import exit_at_once

LAZY_IMPORTS = ("torch.fx.experimental.symbolic_shapes", "triton.experimental.gluon")  # warm_lazy_imports
CHILD_INTERNAL_ERROR = 70  # exit code when kbx's own child code fails, not the candidate
POLL_S = 0.05


class Zygote:
    def __init__(self, protocol_fd: int, fork=os.fork) -> None:
        self.out = protocol_fd
        self.fork = fork  # os.fork, or kbx.sandbox.namespaces.IsolatedForker().fork
        self.selector = selectors.DefaultSelector()
        self.children: dict[str, dict] = {}  # id -> {pid, event_r, control_w, buf}
        self.by_pid: dict[int, str] = {}
        self.stdin_buf = b""
        self.frozen: set[int] = set()  # pids the last freeze stopped

    def emit(self, **msg) -> None:
        data = (json.dumps(msg) + "\n").encode()
        while data:
            data = data[os.write(self.out, data) :]

    def serve(self) -> None:
        self.selector.register(0, selectors.EVENT_READ, "stdin")
        while True:
            for key, _ in self.selector.select(POLL_S):
                if key.data == "stdin":
                    if not self._read_stdin():
                        self._shutdown()
                        return
                else:
                    self._read_child(key.data)
            self._reap()

    def _read_stdin(self) -> bool:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return False
        self.stdin_buf += chunk
        while b"\n" in self.stdin_buf:
            line, self.stdin_buf = self.stdin_buf.split(b"\n", 1)
            if line.strip():
                self._handle(json.loads(line))
        return True

    def _handle(self, msg: dict) -> None:
        op = msg["op"]
        if op == ZygoteOp.SPAWN:
            self._spawn(msg["job"])
        elif op == ZygoteOp.SEND and msg["id"] in self.children:
            try:
                os.write(self.children[msg["id"]]["control_w"], msg["text"].encode() + b"\n")
            except OSError:
                pass  # the child is gone; its exit event follows
        elif op == ZygoteOp.KILL and msg["id"] in self.children:
            _kill_group(self.children[msg["id"]]["pid"])
        elif op == ZygoteOp.FREEZE:
            self.frozen |= freezer.freeze([c["pid"] for c in self.children.values()])
            self.emit(id="", event=Event.FROZEN, token=msg.get("token", 0), processes=len(self.frozen))
        elif op == ZygoteOp.RELEASE and msg["id"] in self.children:
            pid = self.children[msg["id"]]["pid"]
            freezer.thaw({pid} & self.frozen)
            self.frozen.discard(pid)
        elif op == ZygoteOp.THAW:
            freezer.thaw(self.frozen)
            self.frozen = set()
        elif op == ZygoteOp.TREES:
            trees = {job_id: freezer.tree(child["pid"]) for job_id, child in self.children.items()}
            self.emit(id="", event=Event.TREES, token=msg.get("token", 0), trees=trees)
        elif op == ZygoteOp.SIGNAL and msg["id"] in self.children:
            try:
                os.kill(self.children[msg["id"]]["pid"], int(msg["signum"]))
            except (ProcessLookupError, PermissionError):
                pass

    def _spawn(self, job: dict) -> None:
        event_r, event_w = os.pipe()
        control_r, control_w = os.pipe()
        if job.get("sandbox") == SANDBOX_NAMESPACES:
            view_plan(job)  # computed once here, inherited by every fork
        pid = self.fork()
        if pid == 0:  # child
            code = CHILD_INTERNAL_ERROR
            try:
                for fd in [event_r, control_w, self.out, *self._all_child_fds()]:
                    os.close(fd)
                self.selector = None
                from kbx.sandbox.child import start_worker

                start_worker(job, event_w, control_r)
                code = 0
            except BaseException:  # report kbx's own failures through stderr (already the job's file)
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(event_w)
        os.close(control_r)
        os.set_blocking(event_r, False)
        self.children[job["id"]] = {"pid": pid, "event_r": event_r, "control_w": control_w, "buf": b""}
        self.by_pid[pid] = job["id"]
        self.selector.register(event_r, selectors.EVENT_READ, job["id"])
        self.emit(id=job["id"], event=Event.SPAWNED, pid=pid)

    def _all_child_fds(self) -> list[int]:
        return [fd for c in self.children.values() for fd in (c["event_r"], c["control_w"]) if fd >= 0]

    def _read_child(self, job_id: str) -> bool:
        """Relay complete event lines; False once the pipe is empty for now or closed."""
        child = self.children[job_id]
        try:
            chunk = os.read(child["event_r"], 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            self.selector.unregister(child["event_r"])
            os.close(child["event_r"])
            child["event_r"] = -1
            return False
        child["buf"] += chunk
        while b"\n" in child["buf"]:
            line, child["buf"] = child["buf"].split(b"\n", 1)
            try:
                event = json.loads(line)
                if not isinstance(event, dict):
                    raise ValueError("not an object")
            except ValueError:
                event = {"event": Event.GARBLED, "text": line[:200].decode(errors="replace")}
            event.pop("id", None)
            self.emit(id=job_id, **event)
        return True

    def _reap(self) -> None:
        while self.by_pid:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            job_id = self.by_pid.pop(pid, None)
            if job_id is None:
                continue
            _kill_group(pid, group_only=True)  # stray grandchildren of the candidate die with it
            child = self.children[job_id]
            while child["event_r"] >= 0 and self._read_child(job_id):
                pass  # drain what the child wrote before dying; a leftover writer cannot block us
            if child["event_r"] >= 0:
                self.selector.unregister(child["event_r"])
                os.close(child["event_r"])
            os.close(child["control_w"])
            del self.children[job_id]
            self.emit(
                id=job_id,
                event=Event.EXIT,
                code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1,
                signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
            )

    def _shutdown(self) -> None:
        for child in self.children.values():
            _kill_group(child["pid"])


def _kill_group(pid: int, group_only: bool = False) -> None:
    """SIGKILL the child's process group (it calls setsid first thing), or the child alone before that.

    After the child is reaped its pid may be reused, so then only the group (kept alive by any
    surviving grandchild) is a safe target.
    """
    kills = ((os.killpg, pid),) if group_only else ((os.killpg, pid), (os.kill, pid))
    for kill, target in kills:
        try:
            kill(target, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue


def warm_lazy_imports() -> None:
    """What torch and Triton import on first use in nearly every candidate's process, imported once here
    instead: `torch.broadcast_shapes` (the tasks' input builders, most elementwise kernels) imports
    torch's symbolic shapes and sympy, about 0.4 s of CPU; Triton's first launch imports Gluon to name
    argument types, about 0.07 s. Over all the experts on the CPU that was 5.8 % of the workers' time,
    and the Math experts' jobs took a fifth less CPU without it (docs/BENCHMARKS.md, "Measurements the
    code cites")."""
    for name in LAZY_IMPORTS:
        importlib.import_module(name)


def main() -> None:
    # Keep the protocol channel private: move it off fd 1 so stray prints go to stderr.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    # A stack-dump request (Evaluator.dump_stacks) that reaches a child before it installs its
    # handler must not kill it: children inherit this until kbx.sandbox.child registers faulthandler.
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    fork = os.fork
    if os.environ.get(SANDBOX_ENV) == SANDBOX_NAMESPACES:  # before any import can start a thread
        fork = IsolatedForker().fork
    import torch  # noqa: F401 - pre-import so every fork starts warm
    import triton  # noqa: F401

    warm_lazy_imports()
    if os.environ.get(INTERPRETER_ENV) == "1":
        interpreter.install()

    import kbx.sandbox.child  # noqa: F401
    import kbx.tasks  # noqa: F401

    Zygote(protocol_fd, fork).serve()
    exit_at_once()


if __name__ == "__main__":
    sys.exit(main())
