"""No expert makes the host wait for the GPU, except where the task's output needs a value only the GPU has
(GPU only; the experts are run by tests/expert_syncs.py, whose docstring says how and why)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

# task id -> why its expert must read a value back (each is a sync eager PyTorch makes too)
SYNCS_BY_DESIGN = {
    "Index/masked_select": "the output's length is the mask's count",
    "Fusion/fused_masked_select_add_gelu": "the output's length is the mask's count",
    "LinearAlgebra/pseudoinverse_svd": "Newton-Schulz stops when its residual is small enough",
    "LinearAlgebra/low_rank_svd_approximation": "subspace iteration stops when the subspace settles",
}
RUN_LIMIT_S = 900


@pytest.mark.gpu
def test_no_expert_waits_for_the_gpu_unless_its_output_needs_it():
    out = subprocess.run([sys.executable, "-m", "tests.expert_syncs"], cwd=REPO, capture_output=True, text=True,
                         timeout=RUN_LIMIT_S)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout)
    print(json.dumps(found, indent=1))
    errors = {t: w for t, w in found.items() if w.startswith("error")}
    assert not errors, errors
    unexpected = {t: w for t, w in found.items() if t not in SYNCS_BY_DESIGN}
    assert not unexpected, f"experts that wait for the GPU: {unexpected}"
