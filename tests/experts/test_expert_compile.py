"""Every expert's kernels compile for an sm_90 GPU as far as Triton's GPU IR, checked on the CPU: the
interpreter runs code the compiler refuses (tests/expert_kernels.py says how and what is left out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.expert_kernels import compile_front_end
from tests.experts.test_experts import EXPERTS

CATEGORIES = sorted({t.split("/")[0] for t in EXPERTS})
CAPTURE_TIMEOUT_S = 900  # a category's experts on their smallest cases: 20 s for all 184 on a 2-core machine

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1",
                                reason="compiles kernels: needs Triton's compiler, not its interpreter")  # fmt: skip


def _interpreted(code: str) -> str:
    """stdout of `code` run by Python under Triton's interpreter, from the repository's root."""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=CAPTURE_TIMEOUT_S)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_expert_kernel_compiles_for_the_gpu(category):
    task_ids = [t for t in EXPERTS if t.startswith(f"{category}/")]
    captured = json.loads(_interpreted(f"import json; from tests.expert_kernels import capture; "
                                       f"print(json.dumps(capture({task_ids!r})))").splitlines()[-1])  # fmt: skip
    assert captured["skipped"] == {}, "experts that no case ran under the interpreter with a kernel launched"
    distinct = {json.dumps({k: v for k, v in launch.items() if k != "task"}, sort_keys=True): launch
                for launch in captured["launches"]}  # fmt: skip
    refused = [f"{launch['task']}: {launch['name']}: {error}"
               for launch in distinct.values() if (error := compile_front_end(launch))]  # fmt: skip
    assert refused == []


INTERPRETER_ONLY = """
import json, torch
from tests.expert_kernels import recording
from tests.fixtures.interpreter_only_kernel import halving_series
with recording() as launches:
    halving_series(torch.ones(5))
print(json.dumps(launches))
"""


def test_a_kernel_the_interpreter_runs_and_the_compiler_refuses_is_caught():
    (launch,) = json.loads(_interpreted(INTERPRETER_ONLY).splitlines()[-1])
    assert launch["signature"] == {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr",
                                   "TERMS": "constexpr"}  # fmt: skip
    assert launch["constexprs"] == {"BLOCK": 128, "TERMS": 4}
    assert "Loop carried variable coeff changed type" in compile_front_end(launch)
