"""A worker pauses for another attempt's timing before a Triton launch, not only between cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

SCRIPT = r"""
import json, os, threading, time
import torch, triton, triton.language as tl
from kbx.worker.child import Reporter, _pause_gate
from kbx.worker.instrument import LaunchCounter

@triton.jit
def fill(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)

control_r, control_w = os.pipe()
event_r, event_w = os.pipe()
counter = LaunchCounter()
counter.install()
counter.gate = _pause_gate(control_r, Reporter(event_w), "cpu")
log = []
os.write(control_w, b"pause\n")
def resume_later():
    time.sleep(0.5)
    log.append(("resume", time.monotonic()))
    os.write(control_w, b"resume\n")
threading.Thread(target=resume_later).start()
out = torch.zeros(8)
fill[(1,)](out, 8, BLOCK=8)
log.append(("launched", time.monotonic()))
events = os.read(event_r, 4096).decode().splitlines()
print(json.dumps({"log": [name for name, _ in sorted(log, key=lambda e: e[1])], "events": events,
                  "launches": counter.launches, "sum": float(out.sum())}))
"""


def test_a_pause_request_holds_the_next_launch_until_resume():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["log"] == ["resume", "launched"]  # the launch waited for "resume"
    assert [json.loads(e)["event"] for e in result["events"]] == ["paused"]  # and acknowledged the pause first
    assert result["launches"] == 1 and result["sum"] == 8.0
