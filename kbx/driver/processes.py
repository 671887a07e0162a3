"""Driver-side handles on the two worker processes of a device: the zygote and the judge.

Both are started with a scrubbed environment and talk JSON lines. Either may die (the OOM killer,
a bug); the handle notices, fails what was in flight with a clear reason, and restarts on next use.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from kbx.core.secrets import scrubbed_env
from kbx.protocol import JUDGE_MODULE, ZYGOTE_MODULE, Event, JudgeOp, ZygoteOp

CLOSE_WAIT_S = 10.0
JUDGE_START_TIMEOUT_S = 300.0  # a judge's start-up (imports), apart from any request's deadline
FREEZE_TIMEOUT_S = 10.0  # for the zygote to stop every candidate's tree
REPLY_POLL_S = 1.0  # how often a waiting request re-reads the time its judge spent frozen


class _WorkerProcess:
    """A `python -m <module>` child with a scrubbed environment, (re)started on demand."""

    module = ""

    def __init__(self, env_extra: dict[str, str], log_path: Path) -> None:
        self.env_extra = env_extra
        self.log_path = log_path
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None

    def _ensure(self) -> subprocess.Popen:
        """The running process; a dead one is replaced and `_started` wires up its reader."""
        if self.proc is None or self.proc.poll() is not None:
            with open(self.log_path, "ab") as log:  # the child keeps its own copy of the descriptor
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", self.module],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    env=scrubbed_env(self.env_extra), close_fds=True,
                )  # fmt: skip
            self._started(self.proc)
        return self.proc

    def _started(self, proc: subprocess.Popen) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the process now; otherwise its first request starts it."""
        with self.lock:
            self._ensure()

    def close(self) -> None:
        close_all([self])


def close_all(processes: list[_WorkerProcess]) -> None:
    """End every process: all told at once (stdin closed), then each waited for (killed after
    CLOSE_WAIT_S), so their exits overlap instead of adding up."""
    running = [p.proc for p in processes if p.proc is not None and p.proc.poll() is None]
    for proc in running:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    deadline = time.monotonic() + CLOSE_WAIT_S
    for proc in running:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()


class ZygoteClient(_WorkerProcess):
    """Spawns candidate children through the zygote and routes their events to per-job queues."""

    module = ZYGOTE_MODULE

    def __init__(self, env_extra: dict[str, str], log_path: Path) -> None:
        super().__init__(env_extra, log_path)
        self.queues: dict[str, queue.Queue] = {}
        self.frozen: queue.Queue = queue.Queue()  # the zygote's answers to "freeze"
        self.trees: queue.Queue = queue.Queue()  # ...and to "trees"
        self.freezes = 0
        self.requests = 0  # "trees" requests, for their tokens
        self.signalled: set[str] = set()  # jobs kbx has signalled (stack dumps), until forgotten

    def _started(self, proc: subprocess.Popen) -> None:
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("id") == "" and msg.get("event") in (Event.FROZEN, Event.TREES):  # the zygote's own, never a
                (self.frozen if msg["event"] == Event.FROZEN else self.trees).put(msg)  # child's (relayed with its id)
                continue
            q = self.queues.get(msg.get("id"))
            if q is not None:
                q.put(msg)
        with self.lock:  # the zygote is gone: every job still waiting hears it
            for q in self.queues.values():
                q.put({"event": Event.ZYGOTE_DIED})

    def _send(self, msg: dict) -> None:
        with self.lock:
            proc = self._ensure()
            try:
                proc.stdin.write((json.dumps(msg) + "\n").encode())
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # the pump reports the death to waiting jobs

    def spawn(self, job: dict) -> queue.Queue:
        q: queue.Queue = queue.Queue()
        self.queues[job["id"]] = q
        self._send({"op": ZygoteOp.SPAWN, "job": job})
        return q

    def send(self, job_id: str, text: str) -> None:
        self._send({"op": ZygoteOp.SEND, "id": job_id, "text": text})

    def kill(self, job_id: str) -> None:
        self._send({"op": ZygoteOp.KILL, "id": job_id})

    def forget(self, job_id: str) -> None:
        self.queues.pop(job_id, None)
        self.signalled.discard(job_id)

    def freeze(self) -> bool:
        """Stop every candidate's whole process tree; whether the zygote confirmed it
        (kbx.sandbox.freezer). `release` continues one worker, `thaw` all."""
        if self.proc is None:
            return True  # no zygote yet, so no candidate to stop
        self.freezes += 1
        self._send({"op": ZygoteOp.FREEZE, "token": self.freezes})
        deadline = time.monotonic() + FREEZE_TIMEOUT_S
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                if self.frozen.get(timeout=remaining).get("token") == self.freezes:
                    return True
            except queue.Empty:
                break
        return False

    def process_trees(self) -> dict[str, list[int]]:
        """Every child's process tree (job id -> pids as the zygote sees them, the worker first), in the order
        the children were spawned; {} when the zygote does not answer within FREEZE_TIMEOUT_S."""
        if self.proc is None:
            return {}
        self.requests += 1
        self._send({"op": ZygoteOp.TREES, "token": self.requests})
        deadline = time.monotonic() + FREEZE_TIMEOUT_S
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                reply = self.trees.get(timeout=remaining)
            except queue.Empty:
                break
            if reply.get("token") == self.requests:
                return {str(job): [int(p) for p in pids] for job, pids in reply.get("trees", {}).items()}
        return {}

    def pid(self) -> int:
        """The zygote's own pid (0 before it starts)."""
        return self.proc.pid if self.proc is not None else 0

    def release(self, job_id: str) -> None:
        """Continue that job's worker process, its descendants still stopped, after a freeze that
        stopped it too."""
        if self.proc is not None:
            self._send({"op": ZygoteOp.RELEASE, "id": job_id})

    def thaw(self) -> None:
        if self.proc is not None:
            self._send({"op": ZygoteOp.THAW})

    def signal_child(self, job_id: str, signum: int) -> None:
        """Through the zygote: its children's pids are those of its own PID namespace."""
        self.signalled.add(job_id)
        self._send({"op": ZygoteOp.SIGNAL, "id": job_id, "signum": int(signum)})


class JudgeClient(_WorkerProcess):
    """One request at a time to the trusted judge process, with a timeout per request."""

    module = JUDGE_MODULE

    def __init__(self, env_extra: dict[str, str], log_path: Path) -> None:
        super().__init__(env_extra, log_path)
        self.replies: queue.Queue = queue.Queue()
        self.serving = False
        self.frozen_s: Callable[[], float] = lambda: 0.0  # seconds held frozen so far (kbx.driver.scheduler)
        self.startup_s: dict[str, float] = {}  # the running process's start-up, by phase (kbx.sandbox.judge.warm_up)

    def stop(self) -> None:
        """SIGSTOP, for another attempt's exclusive GPU window; `cont` resumes."""
        self._signal_process(signal.SIGSTOP)

    def cont(self) -> None:
        self._signal_process(signal.SIGCONT)

    def _signal_process(self, signum: int) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)

    def _started(self, proc: subprocess.Popen) -> None:
        self.replies = queue.Queue()
        self.serving = False
        threading.Thread(target=self._pump, args=(proc, self.replies), daemon=True).start()

    def _pump(self, proc: subprocess.Popen, replies: queue.Queue) -> None:
        for line in proc.stdout:
            self.serving = True  # it has answered, so its SIGUSR1 handler is installed
            replies.put(json.loads(line))
        replies.put({"error": "the judge process exited"})

    def signal(self, signum: int) -> None:
        """Signal the process once it has answered a request (diagnostics: SIGUSR1 dumps its
        stacks into its log); before its handler is installed, SIGUSR1 would kill it."""
        proc = self.proc
        if proc is not None and self.serving and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)

    def request(self, msg: dict, timeout_s: float, frozen_counts: bool = True) -> dict:
        """The reply, or an error once `timeout_s` passed without it; time the judge spent frozen
        for other attempts' windows does not count (`frozen_counts=False`: inside its own window)."""
        with self.lock:
            proc = self._ensure()
            if not self.serving and msg.get("op") != JudgeOp.PING:  # a fresh process answers a ping once it is ready
                started = self._ask(proc, {"op": JudgeOp.PING}, JUDGE_START_TIMEOUT_S)
                if "error" in started:
                    return started
                self.startup_s = started.get("startup_s", {})
            return self._ask(proc, msg, timeout_s, frozen_counts)

    def _ask(self, proc: subprocess.Popen, msg: dict, timeout_s: float, frozen_counts: bool = True) -> dict:
        try:
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            return {"error": f"the judge process is gone: {exc}"}
        frozen_s = self.frozen_s if frozen_counts else (lambda: 0.0)
        started, frozen_mark = time.monotonic(), frozen_s()
        while (remaining := timeout_s - (time.monotonic() - started - (frozen_s() - frozen_mark))) > 0:
            try:
                return self.replies.get(timeout=min(remaining, REPLY_POLL_S))
            except queue.Empty:
                continue
        proc.kill()
        return {"error": f"the judge did not answer within {timeout_s:.0f} s"}


class JudgePool:
    """Several judge processes, so one slow verdict (a large stochastic check) does not hold up the
    rest. A lease hands out an idle one."""

    def __init__(self, env_extra: dict[str, str], log_dir: Path, size: int) -> None:
        self.clients = [JudgeClient(env_extra, log_dir / f"judge{i}.log") for i in range(max(1, size))]
        self.idle: queue.Queue = queue.Queue()
        for client in self.clients:
            self.idle.put(client)

    @contextlib.contextmanager
    def lease(self) -> Iterator[JudgeClient]:
        client = self.idle.get()
        try:
            yield client
        finally:
            self.idle.put(client)

    def close(self) -> None:
        close_all(self.clients)
