"""Tries to make every checker it can reach say "equal": replaces torch.allclose, torch.equal,
torch.isclose, torch.testing.assert_close, kbx's compare functions and the loaded task's tolerance
and reference inside its own worker, then returns garbage (computed with Triton). The judge is a
separate process that never imports candidate code, so none of this reaches it.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import sys

import torch
import triton
import triton.language as tl

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None

try:
    import kbx.contract.compare as _compare
    from kbx.contract.compare import PASS

    _compare.compare = lambda *a, **k: PASS
    _compare.compare_tensors = lambda *a, **k: PASS
except Exception:  # noqa: BLE001 - best effort, like a real cheat
    pass

for name, module in list(sys.modules.items()):
    task = getattr(module, "TASK", None)
    if name.startswith("kbx_task__") and task is not None:
        from kbx.tasks import Tolerance

        object.__setattr__(task, "tolerance", Tolerance(atol={"float32": 1e30}, rtol={"float32": 1e30}))
        object.__setattr__(task, "reference", lambda input, other: input * 7)


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 7.0, mask=mask)


def scale_add(input, other):
    out = torch.empty_like(input)
    _kernel[(triton.cdiv(input.numel(), 1024),)](input, out, input.numel(), BLOCK=1024)
    return out
