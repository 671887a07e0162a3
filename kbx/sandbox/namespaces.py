"""The operating system's sandbox around one attempt: Linux namespaces entered at fork.

The zygote forks each worker as PID 1 of a fresh PID namespace (IsolatedForker); the worker then
enters new mount, network, IPC and UTS namespaces, builds the candidate's view of the filesystem,
mounts a private /proc and gives up its privileges, all before any candidate code runs. A
non-root zygote works inside a user namespace of its own. What the candidate then gets:

- a read-only, nosuid world (Python, torch, triton), with home directories, /run and the
  evaluation's working folder hidden under empty tmpfs mounts; only its own job directory is
  writable, plus a private /tmp and /dev/shm;
- of kbx, the parts its worker runs on, wherever kbx is installed; the tasks folders (reference and
  expert files), kbx's git store and its other parts hidden (kbx.sandbox.answers);
- a minimal /dev (null, zero, full, random, urandom and the GPU's device nodes);
- no network (an empty network namespace) and no view of any process but its own descendants;
- as root, the unprivileged uid `nobody` with no capabilities; otherwise its own uid with every
  capability of its user namespace dropped; no_new_privs either way;
- death of everything it started when the attempt ends: the worker is its namespace's init, and
  when it exits the kernel kills every process left in it (setsid and double forks included).

Namespaces are entered with unshare(2) in a fork of the pre-imported zygote rather than by
starting a sandboxing tool per attempt: a fresh interpreter that imports torch costs seconds, a
fork milliseconds, and no fork is added to today's one per attempt (docs/SECURITY.md has the
measurements). As PID 1 the worker ignores signals it sends itself without a handler; the kernel's
own (a segfault) and the zygote's kill still end it. Needs Linux >= 5.12 (mount_setattr).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import glob
import json
import os
import pwd
import signal
import sys

from kbx.protocol import SANDBOX_NAMESPACES
from kbx.sandbox import answers

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
# kbx's stores under the driver's working directory: records, LLM caches and other methods'
# kernels a candidate could otherwise look up and copy at run time.
STORE_DIRS = ("mlruns", ".kbx_cache", ".services", "outputs", "multirun")
HIDDEN_DIRS = ("/tmp", "/var/tmp", "/run", "/root", "/home", "/mnt", "/media", "/srv")
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


def view_plan(job: dict) -> tuple[list[str], list[str], list[str], answers.KbxView]:
    """(hidden directories, visible paths under them, kbx's stores, kbx's view) for a job. All but
    the stores are the same for every job of an evaluation (kbx's view for each kind of attempt),
    so the zygote computes them once and every fork inherits them; stores are looked for at each
    fork, since one may appear while the evaluation runs. Stores and kbx's answers are covered
    last: a visible path (a checkout under /tmp) may bring them back."""
    hidden, visible = _view_plan(os.path.dirname(os.path.dirname(job["job_dir"])))
    stores = [s for s in (os.path.join(os.getcwd(), name) for name in STORE_DIRS) if os.path.isdir(s)]
    return hidden, visible, stores, answers.kbx_view(job["tasks_dir"], bool(job.get("expert")))


@functools.lru_cache(maxsize=4)
def _view_plan(eval_dir: str) -> tuple[list[str], list[str]]:
    hidden = _hidden_dirs(eval_dir)
    return hidden, _visible_paths(hidden, eval_dir)


def _visible_paths(hidden: list[str], eval_dir: str) -> list[str]:
    """Read-only paths the worker needs that may lie under a hidden directory: the interpreter's
    prefixes and every import path (a virtualenv under /root, PYTHONPATH under /tmp)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    return sorted(p for p in paths if any(_under(p, h) for h in hidden) and not _under(eval_dir, p))


def _hidden_dirs(eval_dir: str) -> list[str]:
    """Directories covered by an empty tmpfs: other users' and this user's files, sockets and other
    attempts (the evaluation's working folder). kbx's stores (STORE_DIRS) and answers (the task
    files among them: the worker's task module is loaded before the sandbox is entered) are
    covered per fork by build_view. /dev is rebuilt whole (build_view), so nothing under it is listed."""
    dirs = [d for d in {*HIDDEN_DIRS, os.path.expanduser("~"), eval_dir}
            if os.path.isdir(d) and os.path.realpath(d) != "/" and not _under(d, "/dev")]  # fmt: skip
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
    """In a fresh mount namespace: the read-only world, hidden directories, minimal /dev, the
    writable job directory and kbx's view. Runs in the worker (enter), before any candidate code."""
    hidden_dirs, visible, stores, kbx_view = view_plan(job)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the host
    keep = {path: os.open(path, os.O_PATH) for path in [job["job_dir"], *visible, *_device_nodes(gpu)]}
    parts = {path: os.open(path, os.O_PATH) for path in kbx_view.part_paths()}
    try:
        _make_read_only("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)
        for hidden in hidden_dirs:
            mode = "mode=1777" if hidden in ("/tmp", "/var/tmp") else "mode=0755"
            _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, f"{TMPFS_SIZE},{mode}")
        _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=1m,mode=0755")
        os.makedirs("/dev/shm")
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"{TMPFS_SIZE},mode=1777")
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):  # fmt: skip
            os.symlink(target, f"/dev/{name}")
        for path, fd in keep.items():
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            _mkpoint(path, is_dir)
            _bind_from_fd(fd, path, writable=path == job["job_dir"])
        for store in [*stores, *kbx_view.places]:
            if os.path.isdir(store):  # else it is out of sight already, under a hidden directory
                _mount("tmpfs", store, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=0755")
        _show_kbx(kbx_view.package, parts)
    finally:
        for fd in [*keep.values(), *parts.values()]:
            os.close(fd)


def _show_kbx(package: str, parts: dict[str, int]) -> None:
    """The kbx package the worker runs, wherever it lives (under a hidden directory too: an editable
    install from a checkout in a home directory), showing `parts` (path -> O_PATH descriptor) alone,
    read-only."""
    os.makedirs(package, exist_ok=True)  # under a hidden directory it is gone, in a tmpfs still writable here
    _mount("tmpfs", package, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path, fd in parts.items():
        _mkpoint(path, os.path.isdir(f"/proc/self/fd/{fd}"))
        _bind_from_fd(fd, path, writable=False)
    _make_read_only(package, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)


# --- processes --------------------------------------------------------------------------------


class IsolatedForker:
    """Forks children that are each PID 1 of a fresh PID namespace. Lives in the zygote, which
    must be single-threaded when it is created (a user namespace demands it).

    unshare(CLONE_NEWPID) only sets the namespace of the caller's *next* child; setns back to its
    own namespace right after the fork lets the next child get a fresh one too. That takes
    CAP_SYS_ADMIN over the namespace returned to, so a non-root zygote first moves into user and
    PID namespaces of its own (see _own_namespaces)."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            _own_namespaces()
        self.own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def fork(self) -> int:
        _unshare(CLONE_NEWPID)
        pid = os.fork()
        if pid == 0:
            os.close(self.own_pid_ns)
        else:
            _check(_libc().setns(self.own_pid_ns, CLONE_NEWPID), "setns back to the zygote's PID namespace")
        return pid


def _own_namespaces() -> None:
    """Enter a user namespace mapping our uid to itself and a PID namespace it owns, by forking:
    the child returns, as PID 1 of that namespace, and goes on as the zygote; this process stays
    behind only to wait for it and exit as it did (the driver holds this process's pid). The child
    dies with it (PDEATHSIG), and every worker with the child."""
    uid, gid = os.getuid(), os.getgid()
    _unshare(CLONE_NEWUSER | CLONE_NEWPID)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    child = os.fork()
    if child == 0:
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # A /proc of this PID namespace, so the zygote's pids name the same processes in /proc as
        # in kill() (kbx.sandbox.freezer walks candidates' trees there).
        _unshare(CLONE_NEWNS)
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        return
    os.closerange(0, 2)  # stdin: the zygote's protocol alone; 2 (the log) stays for errors
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    _, status = os.waitpid(child, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def enter(job: dict, gpu: bool) -> None:
    """In a child of IsolatedForker.fork (PID 1 of its namespace): its own mount, network, IPC
    and UTS namespaces, the filesystem view, a private /proc, then no privileges: root becomes
    `nobody`, any other user drops its namespace's capabilities. Everything the candidate starts
    dies with this process, the namespace's init."""
    root = os.geteuid() == 0  # the forker's user namespace (non-root zygotes) maps our uid to itself
    if root:
        _give_job_dir(job["job_dir"])
    _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
    build_view(job, gpu)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _drop_privileges(root, gpu)


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
        from kbx.core.secrets import drop_capabilities

        drop_capabilities()
    _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


# --- probe ------------------------------------------------------------------------------------


def probe(gpu: bool = False) -> str:
    """"" when the sandbox works here, else why not: enters it in a child with a scratch job and
    checks from inside that the world is read-only, the job directory writable, the network,
    other processes and kbx's answers out of sight, and the kbx its workers run on in sight."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kbx-sandbox-probe-") as work:
        job_dir = os.path.join(work, "jobs", "probe")
        os.makedirs(job_dir)
        tasks_dir = os.path.join(work, "tasks")
        os.makedirs(tasks_dir)
        open(os.path.join(tasks_dir, "task.py"), "w").close()  # noqa: SIM115 - must stay out of sight
        report_r, report_w = os.pipe()
        pid = IsolatedForker().fork()
        if pid == 0:
            os.close(report_r)
            try:
                enter({"job_dir": job_dir, "tasks_dir": tasks_dir}, gpu)
                os.write(report_w, json.dumps(_inside_checks(job_dir, tasks_dir, answers.package_dir())).encode())
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


def _inside_checks(job_dir: str, tasks_dir: str, package: str) -> dict:
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
        "other processes are visible": [p for p in os.listdir("/proc") if p.isdigit()] == ["1"],
        "the network is reachable": not connects(),
        "the kbx the worker runs on is out of sight": os.path.isfile(os.path.join(package, "sandbox", "child.py")),
        "kbx's expert pieces are in sight": not os.path.exists(os.path.join(package, "experts")),
    }


def main() -> None:
    """`python -m kbx.sandbox.namespaces [--gpu]`: print the probe's verdict as JSON, exit 0 if usable."""
    reason = probe(gpu="--gpu" in sys.argv)
    print(json.dumps({"sandbox": SANDBOX_NAMESPACES, "available": not reason, "reason": reason}))
    sys.exit(0 if not reason else 1)


if __name__ == "__main__":
    main()
