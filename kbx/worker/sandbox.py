"""The operating system's sandbox around one attempt: Linux namespaces entered at fork.

The zygote forks a *shim* per attempt; the shim enters new mount, PID, network, IPC and UTS
namespaces (plus a user namespace when kbx does not run as root), builds the candidate's view of
the filesystem, and forks the namespace's *init* (PID 1), which mounts a private /proc and forks
the *worker* (PID 2) that runs the candidate. What the candidate then gets:

- a read-only, nosuid world (Python, torch, triton, kbx), with home directories, /run, the tasks
  folder (reference and expert files) and the evaluation's working folder hidden under empty
  tmpfs mounts; only its own job directory is writable, plus a private /tmp and /dev/shm;
- a minimal /dev (null, zero, full, random, urandom and the GPU's device nodes);
- no network (an empty network namespace) and no view of any process but its own descendants;
- as root, the unprivileged uid `nobody` with no capabilities; otherwise its own uid with every
  capability of its user namespace dropped; no_new_privs either way;
- death of everything it started when the attempt ends: when the worker exits, init exits, and
  the kernel kills every process left in the PID namespace (setsid and double forks included);
  init also dies with the shim (PDEATHSIG), and the zygote kills the shim's process group.

Namespaces are entered with unshare(2) in a fork of the pre-imported zygote rather than by
starting a sandboxing tool per attempt: a fresh interpreter that imports torch costs seconds, a
fork milliseconds (docs/SECURITY.md has the measurements). Needs Linux >= 5.12 (mount_setattr).
"""

from __future__ import annotations

import ctypes
import errno
import glob
import json
import os
import pwd
import signal
import sys

NAMESPACES = "namespaces"  # eval.sandbox: the mode this module provides
NONE = "none"  # eval.sandbox=none: candidates run without it (every record says so)
MODES = (NAMESPACES, NONE)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 0x1, 0x2
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (added in Linux 5.12)
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
NOBODY_UID = 65534  # when the passwd database has no `nobody`

DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
GPU_NODE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*")
HIDDEN_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/root", "/home", "/mnt", "/media", "/srv")
TMPFS_SIZE = "size=4g"  # each private tmpfs (RAM): room for compile caches, no memory filling


class SandboxError(RuntimeError):
    """The OS refused a step of the sandbox; the message names the step and the errno."""


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]  # fmt: skip


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)} (errno {errno.errorcode.get(err, err)})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _make_read_only(path: str, attrs: int) -> None:
    attr = _MountAttr(attr_set=attrs)
    result = _libc().syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE,
                             ctypes.byref(attr), ctypes.sizeof(attr))  # fmt: skip
    _check(0 if result == 0 else -1, f"mount_setattr {path} (needs Linux >= 5.12)")


def _unshare(flags: int) -> None:
    _check(_libc().unshare(flags), "unshare")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def nobody_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return NOBODY_UID, NOBODY_UID


# --- the filesystem view ---------------------------------------------------------------------


def _visible_paths(job: dict) -> list[str]:
    """Read-only paths the worker needs that may lie under a hidden directory: the interpreter's
    prefixes and every import path (a virtualenv under /root, PYTHONPATH under /tmp)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    hidden = _hidden_dirs(job)
    return sorted(p for p in paths if any(_under(p, h) for h in hidden) and not _under(job["job_dir"], p))


def _hidden_dirs(job: dict) -> list[str]:
    """Directories covered by an empty tmpfs: other users' and this user's files, sockets, other
    attempts (the evaluation's working folder) and the task files (the worker's task module is
    loaded before the sandbox is entered, so expert kernels and other tasks stay out of reach)."""
    extra = [os.path.expanduser("~"), job["tasks_dir"], os.path.dirname(os.path.dirname(job["job_dir"]))]
    dirs = [d for d in {*HIDDEN_DIRS, *extra} if os.path.isdir(d) and os.path.realpath(d) != "/"]
    # A hidden directory inside another one is covered already (its mount point would be gone).
    return sorted(d for d in dirs if not any(o != d and _under(d, o) for o in dirs))


def _under(path: str, parent: str) -> bool:
    path, parent = os.path.realpath(path), os.path.realpath(parent)
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _device_nodes(gpu: bool) -> list[str]:
    nodes = [f"/dev/{n}" for n in DEV_NODES if os.path.exists(f"/dev/{n}")]
    if gpu:
        nodes += [p for pattern in GPU_NODE_GLOBS for p in sorted(glob.glob(pattern)) if not os.path.isdir(p)]
    return nodes


def _bind_from_fd(fd: int, target: str, writable: bool) -> None:
    """Bind what `fd` (an O_PATH descriptor opened before the tree was covered) names onto
    `target`; the bind inherits the read-only flag of its source mount, so clear or set it."""
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if writable else MS_RDONLY)
    _mount(None, target, None, flags)


def _mkpoint(path: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def build_view(job: dict, gpu: bool) -> None:
    """In a fresh mount namespace: the read-only world, hidden directories, minimal /dev and the
    writable job directory. Runs in the shim, before the PID namespace's init is forked."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the host
    keep = {path: os.open(path, os.O_PATH) for path in [job["job_dir"], *_visible_paths(job), *_device_nodes(gpu)]}
    try:
        _make_read_only("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)
        for hidden in _hidden_dirs(job):
            mode = "mode=1777" if hidden in ("/tmp", "/var/tmp", "/dev/shm") else "mode=0755"
            _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, f"{TMPFS_SIZE},{mode}")
        _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=1m,mode=0755")
        for sub, mode in (("shm", "mode=1777"),):
            os.makedirs(f"/dev/{sub}", exist_ok=True)
            _mount("tmpfs", f"/dev/{sub}", "tmpfs", MS_NOSUID | MS_NODEV, f"{TMPFS_SIZE},{mode}")
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):  # fmt: skip
            os.symlink(target, f"/dev/{name}")
        for path, fd in keep.items():
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            _mkpoint(path, is_dir)
            _bind_from_fd(fd, path, writable=path == job["job_dir"])
            if path.startswith("/dev/"):  # device nodes need their mount without nodev
                _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_NOSUID)
    finally:
        for fd in keep.values():
            os.close(fd)


# --- processes --------------------------------------------------------------------------------


def enter(job: dict, gpu: bool) -> None:
    """Called in the zygote's fresh child (the shim). Returns only in the worker, PID 2 of the
    attempt's namespaces, as `nobody` (root) or without capabilities (other users). The shim and
    init exit from here; the shim mirrors the worker's exit status to the zygote."""
    os.setsid()  # the zygote kills this group on timeout: shim and init
    root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    if root:
        _give_job_dir(job["job_dir"])
        _unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
    else:
        _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    build_view(job, gpu)
    status_r, status_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(status_r)
        _run_init(status_w, root, gpu)  # returns only in the worker
        return
    os.close(status_w)
    _forward(signal.SIGUSR1, init)
    _mirror(_wait(init, status_r))


def _run_init(status_w: int, root: bool, gpu: bool) -> None:
    """PID 1 of the attempt: private /proc, then the worker; reaps orphans and reports the
    worker's exit status to the shim. Its exit makes the kernel kill whatever is left."""
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a shim killed before this killed its group
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    worker = os.fork()
    if worker == 0:
        os.close(status_w)
        _drop_privileges(root, gpu)
        return
    _forward(signal.SIGUSR1, worker)
    status = _reap_until(worker)
    os.write(status_w, json.dumps(status).encode())
    os._exit(0)


def _give_job_dir(job_dir: str) -> None:
    uid, gid = nobody_ids()
    for base, dirs, files in os.walk(job_dir):
        for name in [base, *(os.path.join(base, f) for f in dirs + files)]:
            os.chown(name, uid, gid)


def _drop_privileges(root: bool, gpu: bool) -> None:
    """Root becomes nobody (keeping the GPU device nodes' groups, so CUDA opens them); any other
    user keeps its uid and drops the capabilities its user namespace gave it."""
    if root:
        uid, gid = nobody_ids()
        groups = sorted({os.stat(p).st_gid for p in _device_nodes(gpu) if p.startswith("/dev/nvidia")} - {0})
        os.setgroups(groups)
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # leaving uid 0 clears every capability set
    else:
        from kbx.eval.sandbox_env import drop_capabilities

        drop_capabilities()
    _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def _forward(signum: int, pid: int) -> None:
    """Pass `signum` on to `pid` (stack dumps reach the worker through shim and init)."""

    def handler(_signum, _frame) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signum, handler)


def _reap_until(worker: int) -> dict:
    """Reap every child (orphans re-parent to PID 1) until the worker has exited."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return {"code": 1, "signal": 0}
        if pid == worker:
            if os.WIFSIGNALED(status):
                return {"code": -1, "signal": os.WTERMSIG(status)}
            return {"code": os.WEXITSTATUS(status), "signal": 0}


def _wait(init: int, status_r: int) -> dict:
    data = b""
    while chunk := os.read(status_r, 4096):
        data += chunk
    os.waitpid(init, 0)
    try:
        return json.loads(data)
    except ValueError:  # init was killed before it reported
        return {"code": -1, "signal": signal.SIGKILL}


def _mirror(status: dict) -> None:
    """Exit the shim the way the worker did, so the zygote reports the worker's own fate."""
    sig = int(status.get("signal", 0))
    if sig:
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
    os._exit(int(status.get("code", 1)) & 0xFF)


# --- probe ------------------------------------------------------------------------------------


def probe(gpu: bool = False) -> str:
    """"" when the sandbox works here, else why not: enters it in a child with a scratch job and
    checks from inside that the world is read-only, the job directory writable, the network and
    other processes out of sight."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kbx-sandbox-probe-") as work:
        job_dir = os.path.join(work, "jobs", "probe")
        os.makedirs(job_dir)
        tasks_dir = os.path.join(work, "tasks")
        os.makedirs(tasks_dir)
        open(os.path.join(tasks_dir, "task.py"), "w").close()  # noqa: SIM115 - must stay out of sight
        report_r, report_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            try:
                enter({"job_dir": job_dir, "tasks_dir": tasks_dir}, gpu)
                os.write(report_w, json.dumps(_inside_checks(job_dir, tasks_dir)).encode())
                os._exit(0)
            except BaseException as exc:  # noqa: BLE001 - reported to the parent as text
                os.write(report_w, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
                os._exit(1)
        os.close(report_w)
        data = b""
        while chunk := os.read(report_r, 4096):
            data += chunk
        os.close(report_r)
        os.waitpid(pid, 0)
    try:
        report = json.loads(data)
    except ValueError:
        return "the sandbox probe died before reporting"
    return report.get("error", "") or "; ".join(k for k, ok in report.items() if not ok)


def _inside_checks(job_dir: str, tasks_dir: str) -> dict:
    import socket

    def can_write(path: str) -> bool:
        try:
            with open(os.path.join(path, ".kbx-probe"), "w") as f:
                f.write("x")
            return True
        except OSError:
            return False

    def connects() -> bool:
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=0.2).close()
            return True
        except OSError as exc:
            return exc.errno not in (errno.ENETUNREACH, errno.ECONNREFUSED, errno.EADDRNOTAVAIL)

    return {
        "job directory not writable": can_write(job_dir),
        "the world is writable": not can_write(sys.prefix) and not can_write("/"),
        "the tasks folder is visible": not os.path.exists(os.path.join(tasks_dir, "task.py")),
        "other processes are visible": sorted(p for p in os.listdir("/proc") if p.isdigit()) == ["1", "2"],
        "the network is reachable": not connects(),
    }


def main() -> None:
    """`python -m kbx.worker.sandbox [--gpu]`: print the probe's verdict as JSON, exit 0 if usable."""
    reason = probe(gpu="--gpu" in sys.argv)
    print(json.dumps({"sandbox": NAMESPACES, "available": not reason, "reason": reason}))
    sys.exit(0 if not reason else 1)


if __name__ == "__main__":
    main()
