"""Task discovery, validation and the reference self-check."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from kbx.quality.check import check_task
from kbx.tasks import CATEGORIES, TaskError, default_tasks_dir, discover, select
from kbx.tasks.registry import expert_entry, load_task_id

GOOD_TASK = textwrap.dedent(
    '''
    import torch
    from kbx.tasks import Call, Case, Task, FIXED, PERF

    TASK = Task(
        entry="{entry}", dtypes=("float32",), signature="{entry}(x)", description="doubles x",
        reference=lambda x: x * 2, make_inputs=lambda p, g, d: Call((torch.ones(p["n"], device=d),)),
        cases=[Case("one", FIXED, {{"n": 4}})],
        perf=[Case(f"p{{i}}", PERF, {{"n": 2 ** i}}) for i in {perf}],
        flops=lambda x: float(x.numel()), bytes=lambda x: 8.0 * x.numel(),
    )
    '''
)


def write_task(root, task_id: str, entry: str = "double", perf=(10, 11, 12), body: str | None = None):
    category, stem = task_id.split("/")
    folder = root / category / stem
    folder.mkdir(parents=True)
    (folder / "task.py").write_text(body if body is not None else GOOD_TASK.format(entry=entry, perf=list(perf)))
    return folder


def test_repository_tasks_cover_every_category():
    tasks = discover()
    assert {t.category for t in tasks.values()} == set(CATEGORIES)
    for task_id, info in tasks.items():
        assert task_id == f"{info.category}/{info.stem}"
        assert 3 <= len(info.spec.perf) <= 5


def test_discovery_reads_a_valid_tree(tmp_path):
    write_task(tmp_path, "Math/double")
    tasks = discover(str(tmp_path))
    assert list(tasks) == ["Math/double"]
    assert tasks["Math/double"].spec.entry == "double"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda root: write_task(root, "Nonsense/double"), "unknown category"),
        (lambda root: write_task(root, "Math/double", perf=(10,)), "perf shapes"),
        (lambda root: write_task(root, "Math/double", entry="not an id"), "not a Python identifier"),
        (lambda root: write_task(root, "Math/double", body="x = 1\n"), "must define TASK"),
        (lambda root: write_task(root, "Math/double", body="raise RuntimeError('boom')\n"), "failed to import"),
        (lambda root: (root / "Math").mkdir() or (root / "Math" / "stray.py").write_text(""), "a task is a folder"),
        (lambda root: (write_task(root, "Math/double"), write_task(root, "Math/Double")), "duplicate task id"),
    ],
)
def test_discovery_rejects_malformed_tasks(tmp_path, setup, message):
    setup(tmp_path)
    with pytest.raises(TaskError, match=message):
        discover.__wrapped__(str(tmp_path))


VARIANTS_OF_TASK = textwrap.dedent(
    """
    import dataclasses
    VARIANTS = [dataclasses.replace(TASK, entry=e, dtypes=(d,), signature=f"{e}(x)", version=v) for e, d, v in TRIPLES]
    """
)


def write_variants(root, triples: str, expert: bool = False):
    """Math/double whose VARIANTS are copies of its TASK, one per (entry, dtype, version) triple."""
    body = GOOD_TASK.format(entry="double", perf=[10, 11, 12]) + VARIANTS_OF_TASK.replace("TRIPLES", triples)
    folder = write_task(root, "Math/double", body=body)
    if expert:
        (folder / "expert.py").write_text("def double(x): ...\ndef double_bf16(x): ...\n")
    return folder


def test_a_task_module_declares_its_dtype_variants(tmp_path):
    write_variants(tmp_path, '[("double_bf16", "bfloat16", 2), ("double_int8", "int8", 3)]', expert=True)
    tasks = discover.__wrapped__(str(tmp_path))
    assert list(tasks) == ["Math/double", "Math/double_bf16", "Math/double_int8"]
    base, bf16, int8 = tasks.values()
    assert (bf16.stem, bf16.spec.entry, bf16.spec.dtypes, bf16.spec.version) == ("double_bf16", "double_bf16",
                                                                                ("bfloat16",), 2)  # fmt: skip
    assert int8.spec.version == 3 and base.spec.version == 1
    assert base.path == bf16.path == int8.path and base.digest == bf16.digest  # one file, one expert
    assert base.expert_path == bf16.expert_path == int8.expert_path != ""
    for task_id, info in tasks.items():  # what workers and judges load, importing one folder
        loaded = load_task_id(tmp_path, task_id)
        assert (loaded.id, loaded.stem, loaded.spec.entry, loaded.spec.version) == (
            info.id, info.stem, info.spec.entry, info.spec.version)  # fmt: skip
    with pytest.raises(TaskError, match="declares no task 'Math/double_fp16'"):
        load_task_id(tmp_path, "Math/double_fp16")
    with pytest.raises(TaskError, match="a task is a folder"):
        load_task_id(tmp_path, "Math/triple")


@pytest.mark.parametrize(
    ("triples", "message"),
    [
        ('[("triple_bf16", "bfloat16", 1)]', "must be double_<suffix>"),  # not named after its folder
        ('[("double_BF16", "bfloat16", 1)]', "must be double_<suffix>"),  # the suffix: lowercase and digits
        ('[("double_bf16", "bfloat99", 1)]', r"\(VARIANTS: double_bf16\): dtypes"),  # validated like TASK
        ('[("double_bf16", "bfloat16", 0)]', r"\(VARIANTS: double_bf16\): version"),
    ],
)
def test_malformed_variants_are_rejected_naming_the_file(tmp_path, triples, message):
    write_variants(tmp_path, triples)
    with pytest.raises(TaskError, match=message):
        discover.__wrapped__(str(tmp_path))


def test_variants_must_be_a_list_of_tasks(tmp_path):
    folder = write_variants(tmp_path, "[]")
    (folder / "task.py").write_text((folder / "task.py").read_text() + "VARIANTS = {'bf16': TASK}\n")
    with pytest.raises(TaskError, match="task.py: VARIANTS must be a list"):
        discover.__wrapped__(str(tmp_path))


def test_a_variant_and_a_folder_of_the_same_id_are_a_duplicate(tmp_path):
    write_variants(tmp_path, '[("double_bf16", "bfloat16", 1)]')
    write_task(tmp_path, "Math/double_bf16", entry="double_bf16")
    with pytest.raises(TaskError, match="duplicate task id 'Math/double_bf16'"):
        discover.__wrapped__(str(tmp_path))


def test_every_repository_task_loads_alone_by_its_id():
    """Workers and judges load one task by id (`load_task_id`); it must be the task discovery found."""
    for task_id, info in discover().items():
        loaded = load_task_id(default_tasks_dir(), task_id)
        assert (loaded.id, loaded.path, loaded.expert_path, loaded.spec.entry, loaded.spec.version, loaded.digest) == (
            info.id, info.path, info.expert_path, info.spec.entry, info.spec.version, info.digest)  # fmt: skip


def test_select_by_category_and_id_and_unknowns():
    tasks = discover()
    assert {t.category for t in select(tasks, category="fusion")} == {"Fusion"}
    assert [t.id for t in select(tasks, ["Activation/gelu"])] == ["Activation/gelu"]
    with pytest.raises(TaskError, match="unknown category 'nope'; valid: all, Activation"):
        select(tasks, category="nope")
    with pytest.raises(TaskError, match="unknown task"):
        select(tasks, ["Activation/nope"])


@pytest.mark.parametrize("task_id", sorted(discover()))
def test_reference_self_check(task_id):
    """Every reference runs on every case, deterministically (or passes its own stochastic check)."""
    result = check_task(discover()[task_id], perf=False)
    assert result.ok, result.problems


def test_self_check_catches_a_nondeterministic_reference(tmp_path):
    body = GOOD_TASK.format(entry="double", perf=[10, 11, 12]).replace("reference=lambda x: x * 2",
                                                                      "reference=lambda x: x * torch.rand(1)")
    write_task(tmp_path, "Math/double", body=body)
    result = check_task(discover.__wrapped__(str(tmp_path))["Math/double"], perf=False)
    assert not result.ok and "not deterministic" in result.problems[0]


def test_tasks_cli_json_lists_records(kbx_cli):
    code, out, err = kbx_cli("kbx.quality", "--json")
    assert code == 0, err
    records = json.loads(out)
    assert {r["category"] for r in records} == set(CATEGORIES)
    assert {"id", "category", "dtypes", "version"} <= set(records[0])


def test_tasks_cli_rejects_unknown_category(kbx_cli):
    code, _, err = kbx_cli("kbx.quality", "--category", "nope")
    assert code == 2 and "unknown category" in err


def test_expert_entry_is_a_variants_own_function_and_a_task_without_an_expert_says_so():
    variant = load_task_id(default_tasks_dir(), "Activation/gelu_bf16")
    assert expert_entry(variant).__name__ == "gelu_bf16"  # the folder's expert.py serves every variant
    with pytest.raises(TaskError, match="has no expert.py"):
        expert_entry(dataclasses.replace(variant, expert_path=""))


def test_keep_rate_check_accepts_a_plausible_rate_and_names_an_implausible_one():
    from kbx.tasks.stochastic import keep_rate_reason

    assert keep_rate_reason(5000, 10_000, 0.5, "whole") == ""  # exactly q
    assert keep_rate_reason(5200, 10_000, 0.5, "whole") == ""  # 4 sd off: plausible
    assert keep_rate_reason(5400, 10_000, 0.5, "whole").startswith("whole: kept fraction 0.5400")  # 8 sd off
    assert keep_rate_reason(0, 50, 0.5, "tiny") == ""  # too few elements to judge


def test_keep_rate_check_finds_a_mask_that_is_right_overall_but_drawn_for_one_half():
    import torch

    from kbx.tasks.stochastic import keep_rate_in_halves

    info = torch.ones(10_000, dtype=torch.bool)
    alternate = torch.arange(10_000) % 2 == 0  # keep rate 0.5 everywhere
    assert keep_rate_in_halves(alternate, info, 0.5) == ""
    first_half = torch.arange(10_000) < 5_000  # 0.5 overall: all kept, then none
    assert keep_rate_in_halves(first_half, info, 0.5).startswith("first half: kept fraction 1.0000")


def test_dropout_check_names_a_value_that_was_not_kept_a_rate_off_and_a_non_finite_output():
    import torch

    from kbx.tasks.stochastic import dropout_reason

    gen = torch.Generator().manual_seed(0)
    kept_val = torch.rand(10_000, generator=gen, dtype=torch.float64) + 1.0  # every element informative
    allowed = torch.full_like(kept_val, 1e-6)
    mask = torch.rand(10_000, generator=gen) < 0.9  # p = 0.1
    assert dropout_reason(torch.where(mask, kept_val, 0.0).float(), kept_val, allowed, 0.1) == ""
    wrong = torch.where(mask, kept_val * 1.01, 0.0)
    assert "neither 0 nor the kept value" in dropout_reason(wrong, kept_val, allowed, 0.1)
    assert "kept fraction" in dropout_reason(torch.where(mask, kept_val, 0.0), kept_val, allowed, 0.5)
    nan = torch.full_like(kept_val, float("nan"))
    assert dropout_reason(nan, kept_val, allowed, 0.1) == "output has non-finite values"


def test_lion_accepts_either_sign_only_where_the_update_is_within_rounding_of_zero():
    import torch

    from kbx.tasks.spec import Call

    lion = discover()["Optimizer/Lion"].spec
    param, grad = torch.tensor([1.0, 1.0, 1.0]), torch.tensor([-9.0, 2.0, -2.0])
    exp_avg = torch.tensor([1.0, 0.5, 0.5])  # element 0: 0.9 * 1 + 0.1 * -9, zero up to rounding
    call = Call((param, grad, exp_avg), {"lr": 0.01})
    ref_p, ref_m = lion.reference(param.clone(), grad, exp_avg.clone(), lr=0.01)

    def verdict(new_param):
        return lion.stochastic(call, ((new_param, ref_m), [new_param, grad, ref_m]))

    assert verdict(ref_p) == ""
    for tie_sign in (-1.0, 0.0, 1.0):  # the tied element may step either way, or not at all
        assert verdict(torch.cat([1.0 - 0.01 * torch.tensor([tie_sign]), ref_p[1:]])) == ""
    flipped = ref_p.clone()
    flipped[1] = 1.0 + 0.01  # a clear update stepped the wrong way
    assert verdict(flipped) == "returned param: 1 of 3 elements differ from the reference step"


def test_invert_matrix_lus_cycle_case_rejects_upstreams_a_inverse_p_squared():
    """Upstream's reference (copied by GEAK's kernels in the corpus) returns U^-1 L^-1 P = A^-1 P^2: right
    whenever P^2 = I. The cycle case must be a true cycle of rows, or that formula passes it."""
    import torch

    from kbx.contract.compare import compare
    from kbx.tasks.inputs import make_generator

    info = discover()["LinearAlgebra/invert_matrix_lu"]
    case = next(c for c in info.spec.cases if c.name == "fixed_3x3_cycle_pivot")
    call = info.spec.make_inputs(case.params, make_generator(0, "cpu"), "cpu")
    a = call.args[0]
    p, lower, upper = torch.linalg.lu(a)
    upstream = torch.linalg.inv(upper) @ torch.linalg.inv(lower) @ p
    assert not torch.equal(p, p.mT)
    assert not compare(info.spec.reference(*call.args, **call.kwargs), upstream, info.spec.tolerance).ok


def test_a_folder_left_with_only_bytecode_is_not_a_task(tmp_path):
    """After a task folder is folded into another as a dtype variant, git leaves its __pycache__."""
    import shutil

    from kbx.tasks.registry import discover, load_task_id

    tasks = tmp_path / "tasks"
    shutil.copytree(Path(__file__).parents[2] / "tasks" / "Activation", tasks / "Activation")
    (tasks / "Activation" / "gelu_bf16" / "__pycache__").mkdir(parents=True)
    assert "Activation/gelu_bf16" in discover(str(tasks))
    assert load_task_id(tasks, "Activation/gelu_bf16").id == "Activation/gelu_bf16"


def test_transformer_block_dropout_check_judges_only_rows_where_dropout_shows():
    """Where the mask cannot be recovered (d_out < 2 (d_k + 2), as at the perf shapes) the check refuses
    a dropout-free output only over rows that dropout moves by more than the tolerance: an honest output
    whose rows all lie within it of the dropout-free result (an H100 perf shape, 2026-11-27) passes."""
    import torch

    from kbx.tasks import Call

    spec = discover()["Fusion/fused_transformer_block"].spec
    gen = torch.Generator().manual_seed(0)

    def call(residual_scale: float) -> Call:
        x, w1 = torch.randn(2, 32, 64, generator=gen), torch.randn(64, 64, generator=gen) / 8
        w2, r = torch.randn(64, 64, generator=gen), residual_scale * torch.randn(2, 32, 64, generator=gen)
        return Call((x, w1, w2, r), {"dropout_p": 0.1})

    quiet = call(30.0)  # a large residual: dropout moves each row by about a tenth of the tolerance
    assert spec.stochastic(quiet, spec.reference(*quiet.args, **quiet.kwargs)) == ""
    loud = call(1.0)
    assert spec.stochastic(loud, spec.reference(*loud.args, **loud.kwargs)) == ""
    assert "dropout-free" in spec.stochastic(loud, spec.reference(*loud.args, dropout_p=0.0))
