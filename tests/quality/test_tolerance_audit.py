"""The tolerance audit (kbx.quality.audit): it must fail a tolerance no honest kernel meets, fail one
that accepts wrong outputs, pass a fair one, and pass every repository task's own tolerance."""

from __future__ import annotations

import math
import textwrap

import pytest
import torch

from kbx.quality.audit import (
    DISTRIBUTION,
    EXACT,
    EXCEPTION,
    FAILING,
    HEADROOM,
    IDENTITY,
    OK,
    TOO_LOOSE,
    TOO_TIGHT,
    VALUES,
    audit_task,
    round_to_tf32,
    run_reference,
    run_tf32,
    truncate_to_tf32,
)
from kbx.quality.audit_report import render
from kbx.tasks import discover

# A K-long fp32 dot product per output element: rounding error grows with K, TF32 error more so.
PRODUCT_TASK = textwrap.dedent(
    """
    import torch
    from kbx.tasks import Call, Case, Task, Tolerance, STANDARD, PERF, matmul_tolerance
    from kbx.tasks.inputs import rand_tensor

    def make_inputs(p, gen, device):
        a = rand_tensor((64, 4096), "float32", "standard", gen, device)
        b = rand_tensor((4096, 64), "float32", "standard", gen, device)
        return Call((a, b))

    TASK = Task(
        entry="prod", dtypes=("float32",), signature="prod(a, b)", description="a @ b",
        reference=lambda a, b: torch.mm(a, b), make_inputs=make_inputs,
        cases=[Case("standard", STANDARD, {{}}), Case("extra_standard", STANDARD, {{}}, extra=True)],
        perf=[Case(f"p{{i}}", PERF, {{}}) for i in range(3)],
        flops=lambda a, b: 1.0, bytes=lambda a, b: 1.0,
        tolerance={tolerance},
    )
    """
)


def audit_with(tmp_path, tolerance: str, tf32: bool = True):
    folder = tmp_path / "MatrixMultiply" / "prod"
    folder.mkdir(parents=True)
    (folder / "task.py").write_text(PRODUCT_TASK.format(tolerance=tolerance))
    info = discover(str(tmp_path))["MatrixMultiply/prod"]
    return audit_task(info, tf32=tf32)


def test_a_tolerance_no_honest_kernel_meets_is_too_tight(tmp_path):
    rows = audit_with(tmp_path, 'Tolerance(atol={"float32": 0.0}, rtol={"float32": 1e-9})', tf32=False)
    assert [r.verdict for r in rows] == [TOO_TIGHT, TOO_TIGHT]
    assert all(r.honest_ratio > 1.0 and r.rejected == "yes" for r in rows)


def test_a_fair_tolerance_passes_with_headroom(tmp_path):
    rows = audit_with(tmp_path, "matmul_tolerance()")
    assert [r.verdict for r in rows] == [OK, OK]
    assert all(r.judged == VALUES and r.honest_ratio <= 1.0 / HEADROOM and r.tf32_ratio <= 1.0 / HEADROOM for r in rows)


def test_fp32_default_fails_a_tf32_product(tmp_path):
    rows = audit_with(tmp_path, "Tolerance()")
    assert rows[0].verdict == TOO_TIGHT and rows[0].tf32_ratio > 100 * rows[0].honest_ratio > 1.0


def test_a_tolerance_that_accepts_wrong_outputs_is_too_loose(tmp_path):
    rows = audit_with(tmp_path, 'Tolerance(atol={"float32": float("inf")})')
    assert [r.verdict for r in rows] == [TOO_LOOSE, TOO_LOOSE]
    assert rows[0].rejected == "no"


def test_extra_cases_are_reported_apart(tmp_path):
    rows = audit_with(tmp_path, 'Tolerance(atol={"float32": 0.0}, rtol={"float32": 1e-9})', tf32=False)
    assert [r.extra for r in rows] == [False, True]
    text = render(rows, "cpu", "test", torch.__version__)
    contract, extras = text.split("## kbx's extra cases")
    assert "| MatrixMultiply/prod | standard |" in contract and "extra_standard" not in contract.split("## Contract")[1]
    assert "| MatrixMultiply/prod | extra_standard |" in extras


def test_round_to_tf32_keeps_ten_mantissa_bits():
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(0))
    r = round_to_tf32(x)
    assert bool(((r.view(torch.int32) & 0x1FFF) == 0).all())
    assert float(((r - x).abs() / x.abs()).max()) <= 2.0**-11
    ties = torch.tensor([1 + 2.0**-11, 1 + 3 * 2.0**-11, math.inf, -math.inf])
    assert round_to_tf32(ties).tolist() == [1.0, 1 + 2 * 2.0**-10, math.inf, -math.inf]  # nearest-even ties


def rows_by_judged(task_id):
    return {r.judged for r in audit_task(discover()[task_id])}


def test_rows_say_how_a_case_is_judged_when_float64_is_not_meaningful():
    assert rows_by_judged("Reduce/argmax") == {EXACT}
    assert DISTRIBUTION in rows_by_judged("Random/rand")
    assert EXCEPTION in rows_by_judged("LinearAlgebra/cholesky")
    assert rows_by_judged("LinearAlgebra/qr") == {IDENTITY}  # measured against size- and condition-scaled bounds


# Every repository task's tolerance must pass the audit on its correctness cases. The full suite
# takes minutes on two shared cores, so CI audits this sample (one or more per category, and every
# task whose tolerance the audit changed); `python -m kbx.quality audit` covers them all.
SAMPLE = (
    # one or more per category
    "Convolution/conv2d", "Fusion/attention", "Fusion/fused_relu_conv2d", "Fusion/fused_softplus_linear",
    "Index/scatter", "LinearAlgebra/det", "LinearAlgebra/solve", "Loss/cross_entropy", "Math/fftn",
    "MatrixMultiply/addmm", "Normalization/batch_norm", "Optimizer/Adam", "Pooling/avg_pool1d",
    "Quantization/matmul_w8a8", "Random/logspace", "Reduce/std", "SpatialOps/grid_sample",
    # every task the audit changed
    "Activation/combined_activation", "Convolution/conv_transpose2d", "Fusion/fused_dropout_sigmoid_linear",
    "Fusion/fused_pixel_shuffle_conv2d", "Fusion/fused_qr_solve", "Fusion/fused_relu_max_pool2d_conv2d",
    "Fusion/fused_transformer_block", "LinearAlgebra/low_rank_svd_approximation", "LinearAlgebra/matrix_power_eig",
    "LinearAlgebra/pseudoinverse_svd", "Math/exp_sqrt", "Math/logit", "MatrixMultiply/matrix_multiply_and_row_dot",
    "MatrixMultiply/tril_mm_and_scale", "Quantization/attention_w8a8", "Quantization/bmm_w8a8",
    "SpatialOps/grid_sample_with_affine",
    # identity checks with bounds from size and condition (kbx.tasks.identities)
    "LinearAlgebra/svd", "LinearAlgebra/qr", "LinearAlgebra/lu", "LinearAlgebra/eig", "LinearAlgebra/ldl_factor",
)  # fmt: skip


@pytest.fixture
def one_thread():
    """The audit's elementwise float64 work runs far faster on one thread on a shared CPU (see kbx.quality.__main__)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.mark.parametrize("task_id", SAMPLE)
def test_repository_tolerances_pass_the_audit(task_id, one_thread):
    failing = [r for r in audit_task(discover()[task_id]) if not r.extra and r.verdict in FAILING]
    assert not failing, [(r.case, r.verdict, r.note) for r in failing]


@pytest.mark.gpu
@pytest.mark.parametrize("task_id", SAMPLE)
def test_repository_tolerances_pass_the_audit_on_a_gpu(task_id):
    """On CUDA the judge's reference runs cuDNN convolutions in TF32 and the TF32 model is the real one."""
    failing = [r for r in audit_task(discover()[task_id], device="cuda", perf_shapes=1) if not r.extra and r.verdict in FAILING]
    assert not failing, [(r.case, r.verdict, r.note) for r in failing]


TAIL_SEEDS = 500  # about 7 of them failed the former 2x TF32 rule on an H100 (29 of 2,000)


TAIL_SEEDS_CPU = 200  # seeds per case of each TF32 model for the terms-judged tasks (1,000 in docs/BENCHMARKS.md)
TERMS_TASKS = ["MatrixMultiply/matrix_multiply_and_row_dot", "Fusion/fused_relu_conv2d", "Convolution/conv_transpose2d",
               "Fusion/fused_conv2d_add", "Fusion/fused_gelu_conv2d", "Fusion/fused_leaky_relu_conv2d"]  # fmt: skip


@pytest.mark.parametrize("rounding", [round_to_tf32, truncate_to_tf32], ids=["nearest", "truncating"])
@pytest.mark.parametrize("task_id", TERMS_TASKS)
def test_the_tf32_tail_stays_under_the_terms_bound_with_headroom(task_id, rounding, one_thread):
    """The tasks judged with a bound from the terms' size (kbx.contract.terms, identities.within_terms):
    a TF32 kernel, operands rounded (cuBLAS) or truncated (Triton's tl.dot, as the experts measured
    on an H200), stays under 1/HEADROOM of it on every random case and seed (1,000 seeds,
    2026-11-28: at most 0.38), where the rule on the output's own size failed 2-10 of 1,000 seeds."""
    from kbx.tasks.identities import worst_ratio
    from kbx.tasks.inputs import make_generator
    from kbx.tasks.spec import FIXED

    info = discover()[task_id]
    for case in [c for c in info.spec.cases if c.kind != FIXED]:
        for seed in range(TAIL_SEEDS_CPU):
            call = info.spec.make_inputs(case.params, make_generator(seed, "cpu"), "cpu")
            reason, ratio = worst_ratio(info.spec.stochastic, call, run_tf32(info, case, seed, "cpu", rounding))
            assert not reason and ratio < 1 / HEADROOM, (case.name, seed, ratio)


@pytest.mark.parametrize(("task_id", "seed"), [("Convolution/conv_transpose2d", 71), ("Fusion/fused_conv2d_add", 432)])
def test_a_truncating_tf32_kernel_fails_the_tolerance_alone_and_passes_the_terms_check(task_id, seed):
    """The seeds where the rule on the output's own size failed the truncating model (2 and 7 of
    1,000 CPU seeds of the outlier case; 9 and 10 of 1,000 for the experts on an H200)."""
    from kbx.contract.compare import allowance
    from kbx.tasks.inputs import make_generator

    info = discover()[task_id]
    case = next(c for c in info.spec.cases if c.name == "outlier")
    expected, got = run_reference(info, case, seed, "cpu"), run_tf32(info, case, seed, "cpu", truncate_to_tf32)
    assert float(((got.double() - expected.double()).abs() / allowance(expected, info.spec.tolerance, "float32")).max()) > 1
    call = info.spec.make_inputs(case.params, make_generator(seed, "cpu"), "cpu")
    assert info.spec.stochastic(call, got) == ""


def test_an_identity_row_measures_the_tf32_model_where_the_reference_has_fp32_products(one_thread):
    """A check-judged task whose reference multiplies fp32 matrices gets the TF32 column too: the
    model's output through the task's own check, at most 1/HEADROOM of its bound for an `ok` row."""
    rows = audit_task(discover()["MatrixMultiply/matrix_multiply_and_row_dot"])
    random_rows = [r for r in rows if r.kind != "fixed"]
    assert random_rows and all(r.judged == IDENTITY for r in rows)
    assert all(0 < r.tf32_ratio <= 1 / HEADROOM and r.verdict == OK for r in random_rows), random_rows


@pytest.mark.gpu
def test_fused_transformer_blocks_expert_meets_its_tolerance_on_every_outlier_seed():
    """The audit models TF32 at one seed; a suite run draws a secret seed each time, so the expert's
    tail over seeds must fit. The layer norm after the products divides their TF32 error by its row's
    spread, so outlier rows reach 6.1x the 1x allowance (2,000 seeds, H100, 2026-11-27)."""
    from kbx.contract.compare import allowance
    from kbx.tasks.registry import expert_entry

    info = discover()["Fusion/fused_transformer_block"]
    fused_transformer_block = expert_entry(info)
    case = next(c for c in info.spec.cases if c.name == "outlier_p0")
    worst = 0.0
    for seed in range(TAIL_SEEDS):
        call = info.spec.make_inputs(case.params, torch.Generator().manual_seed(seed), "cpu")
        args = [a.cuda() for a in call.args]
        expected = info.spec.reference(*args, **call.kwargs)
        got = fused_transformer_block(*args, **call.kwargs)
        bound = allowance(expected, info.spec.tolerance, "float32")
        worst = max(worst, float(((got.double() - expected.double()).abs() / bound).max()))
    assert worst <= 1.0


def test_audit_cli_writes_the_command_it_ran_and_refuses_a_missing_directory(kbx_cli, tmp_path):
    out = tmp_path / "TOLERANCES.md"
    code, stdout, err = kbx_cli("kbx.quality", "audit", "--task", "LinearAlgebra/qr", "--out", str(out))
    assert code == 0, err[-2000:]
    text = out.read_text()
    assert text.startswith("# Tolerance audit\n") and f"`python -m kbx.quality audit --task LinearAlgebra/qr --out {out}`" in text
    assert "| LinearAlgebra/qr | n512 |" not in text and "| identity |" in text
    code, _, err = kbx_cli("kbx.quality", "audit", "--task", "LinearAlgebra/qr", "--out", str(tmp_path / "no" / "t.md"))
    assert code == 2 and err.strip().startswith("kbx.quality: error: --out") and len(err.strip().splitlines()) == 1


@pytest.mark.gpu
def test_audit_cli_on_a_gpu_names_the_card_and_its_tf32_settings(kbx_cli, tmp_path):
    """The GPU document: the judge's own TF32 defaults for the reference, the first perf shape included."""
    out = tmp_path / "TOLERANCES_GPU.md"
    code, stdout, err = kbx_cli("kbx.quality", "audit", "--device", "cuda", "--first-perf", "--task", "Convolution/conv2d",
                                "--task", "LinearAlgebra/qr", "--task", "Fusion/fused_bmm_rmsnorm_gelu_dropout_sub",
                                "--out", str(out))  # fmt: skip
    assert code == 0, stdout[-3000:] + err[-2000:]
    text = out.read_text()
    assert text.startswith("# Tolerance audit on ") and "cuDNN convolution TF32 on" in text
    assert "| LinearAlgebra/qr | n512 |" in text and "| Convolution/conv2d |" in text
    assert "| audit error |" not in text  # the task's check gets outputs on the GPU, as the judge hands them over
