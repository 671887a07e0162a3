"""What the zygote prepares for the CPU workers: Triton's interpreter entered without rebuilding its wrappers
(kbx.sandbox.interpreter), which computes the same, and the lazy imports made before it forks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

# A kernel that calls a @triton.jit helper (the interpreter patches the language again at each
# call) over several programs, run twice; then whether the language is back to its own functions.
PROGRAM = r"""
import json, sys
import torch, triton
import triton.language as tl
from kbx.sandbox import interpreter

installed = interpreter.install() if sys.argv[1] == "reuse" else False
before = {name: getattr(tl, name) for name in ("load", "store", "arange", "where", "program_id")}
tensor_add = tl.tensor.__add__

@triton.jit
def _scaled(x, y, scale):
    return tl.where(x > y, x * scale, y + scale)

@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _scaled(x, y, 2.0) + tl.sum(x, axis=0), mask=mask)

g = torch.Generator().manual_seed(0)
x, y = torch.randn(300, generator=g), torch.randn(300, generator=g)
outs = []
for _ in range(2):
    out = torch.empty_like(x)
    kernel[(triton.cdiv(300, 64),)](x, y, out, 300, BLOCK=64)
    outs.append(out.tolist())
restored = all(getattr(tl, name) is fn for name, fn in before.items()) and tl.tensor.__add__ is tensor_add
print(json.dumps({"installed": installed, "outs": outs, "restored": restored}))
"""


def run(mode: str) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, mode], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_reused_wrappers_compute_the_same_and_leave_the_language_as_it_was():
    stock, reused = run("stock"), run("reuse")
    assert reused["installed"] and not stock["installed"]
    assert reused["outs"] == stock["outs"] and reused["outs"][0] == reused["outs"][1]
    assert stock["restored"] and reused["restored"]


def test_an_interpreter_of_another_shape_is_left_alone(monkeypatch):
    from triton.runtime import interpreter as triton_interpreter

    from kbx.sandbox import interpreter

    def other(pkg, builder, scope, extra=None):
        pass

    monkeypatch.setattr(triton_interpreter, "_patch_builtin", other)
    assert not interpreter.install()
    assert triton_interpreter._patch_builtin is other


def test_installing_twice_wraps_once(monkeypatch):
    from triton.runtime import interpreter as triton_interpreter

    from kbx.sandbox import interpreter

    monkeypatch.setattr(triton_interpreter, "_patch_builtin", triton_interpreter._patch_builtin)
    assert interpreter.install()
    first = triton_interpreter._patch_builtin
    assert interpreter.install() and triton_interpreter._patch_builtin is first


def test_the_zygote_warms_what_torch_and_triton_import_on_first_use():
    """Each of kbx.sandbox.zygote.LAZY_IMPORTS is still what a first `torch.broadcast_shapes` or a
    first kernel argument's type name imports; a torch or Triton that stops doing so fails here."""
    program = (
        "import json, sys, torch, triton\n"
        "from triton.runtime.jit import mangle_type\n"
        "before = set(sys.modules)\n"
        "torch.broadcast_shapes((2, 1), (1, 3)); mangle_type(7)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from kbx.sandbox.zygote import LAZY_IMPORTS

    assert set(LAZY_IMPORTS) <= set(json.loads(proc.stdout))
