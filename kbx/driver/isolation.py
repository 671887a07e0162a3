"""Driver side of the sandbox: is it available here, asked once per process and kind of device.

The probe runs `python -m kbx.sandbox.namespaces` (no torch import: tens of milliseconds), which
enters the sandbox in a child and checks from inside that it holds (kbx/sandbox/namespaces.py).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys

from kbx.core.errors import SandboxUnavailable
from kbx.core.secrets import scrubbed_env
from kbx.protocol import PROBE_MODULE, SANDBOX_MODES, SANDBOX_NAMESPACES, SANDBOX_NONE

PROBE_TIMEOUT_S = 60.0



def require_sandbox(mode: str, gpu: bool) -> None:
    """Raise SandboxUnavailable unless candidates can run under `mode` here."""
    if mode not in SANDBOX_MODES:
        raise SandboxUnavailable(f"eval.sandbox must be one of {', '.join(SANDBOX_MODES)}, got {mode!r}")
    if mode == SANDBOX_NONE:
        return
    reason = probe_reason(gpu)
    if reason:
        raise SandboxUnavailable(
            f"the {SANDBOX_NAMESPACES} sandbox is not available here ({reason}); it needs Linux >= 5.12 with user namespaces "
            "(or root); pass eval.sandbox=none (kbx.evaluate: --sandbox none) to run candidates without it, "
            "and every record will say so"
        )  # fmt: skip


@functools.lru_cache(maxsize=2)
def probe_reason(gpu: bool) -> str:
    try:
        done = subprocess.run([sys.executable, "-m", PROBE_MODULE, *(["--gpu"] if gpu else [])],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=scrubbed_env())  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"the probe did not finish within {PROBE_TIMEOUT_S:.0f} s"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])["reason"]
    except (ValueError, IndexError, KeyError):
        return f"the probe failed: {(done.stderr or done.stdout).strip()[-300:]}"
