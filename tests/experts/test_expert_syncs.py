"""No expert makes the host wait for the GPU, except where its task's reference waits too (GPU only; the
experts are run by tests/expert_syncs.py, whose docstring says how and why)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

# task id -> why its expert must read a value back, as its task's reference does (these 12 of the 184 experts
# synced on an H200, 2026-12-04; the GPU-bound shapes repeat within 2 %, the host-bound ones did not).
OUTPUT_LENGTH = "the output's length is the mask's count"
RAISES = "it raises for {}, as the reference does: a decision made on the host"
CONVERGES = "it iterates until {} (eager's solver checks its own convergence info too)"
SYNCS_BY_DESIGN = {
    "Index/masked_select": OUTPUT_LENGTH,
    "Fusion/fused_masked_select_add_gelu": OUTPUT_LENGTH,
    "Fusion/fused_log_tanh": RAISES.format("a non-positive input"),
    "LinearAlgebra/cholesky": RAISES.format("a matrix that is not symmetric"),
    "LinearAlgebra/solve": RAISES.format("an exactly zero pivot (kbx/experts/lu.py)"),
    "LinearAlgebra/invert_matrix_lu": RAISES.format("an exactly zero pivot (kbx/experts/lu.py)"),
    "Fusion/fused_lu_solve": RAISES.format("an exactly zero pivot (kbx/experts/lu.py)"),
    "LinearAlgebra/solve_symmetric_ldl": RAISES.format("an exactly zero pivot"),
    "LinearAlgebra/svd": CONVERGES.format("a Jacobi sweep rotates nothing (kbx/experts/jacobi.py)"),
    "Fusion/fused_svd_reconstruct": CONVERGES.format("a Jacobi sweep rotates nothing (kbx/experts/jacobi.py)"),
    "LinearAlgebra/pseudoinverse_svd": CONVERGES.format("the Newton-Schulz residual is small enough"),
    "LinearAlgebra/low_rank_svd_approximation": CONVERGES.format("the subspace settles"),
}
RUN_LIMIT_S = 900


@pytest.mark.gpu
def test_no_expert_waits_for_the_gpu_unless_its_reference_does():
    out = subprocess.run([sys.executable, "-m", "tests.expert_syncs"], cwd=REPO, capture_output=True, text=True,
                         timeout=RUN_LIMIT_S)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout)
    print(json.dumps(found, indent=1))
    errors = {t: w for t, w in found.items() if w.startswith("error")}
    assert not errors, errors
    unexpected = {t: w for t, w in found.items() if t not in SYNCS_BY_DESIGN}
    assert not unexpected, f"experts that wait for the GPU: {unexpected}"
