"""method=inductor: torch.compile of the reference, judged like any kernel (GPU only)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kbx.core.hardware import load_profiles
from kbx.methods.base import MethodError
from kbx.methods.inductor import build
from tests.llm.test_llm import task


def test_refused_on_a_cpu_where_inductor_emits_cpp():
    with pytest.raises(MethodError, match="needs a CUDA GPU"):
        build(hardware=load_profiles()["cpu"])


def test_the_proposal_compiles_the_tasks_own_reference():
    (proposal,) = build(mode="default").propose(task("Activation/gelu"), 0, [])
    assert "torch.compile(_chosen.reference" in proposal.code and "tasks/Activation/gelu/task.py" in proposal.code
    assert build().propose(task("Activation/gelu"), 1, []) == []


def test_a_dtype_variants_proposal_compiles_the_variants_reference():
    """gelu_int8 lives in gelu's task file; its proposal must compile the int8 reference, not gelu's."""
    import torch

    (proposal,) = build(mode="default").propose(task("Activation/gelu_int8"), 0, [])
    scope: dict = {}
    exec(compile(proposal.code, "<proposal>", "exec"), scope)  # noqa: S102 - kbx's own template; compiles lazily
    assert scope["_chosen"].entry == "gelu_int8" and "gelu_int8" in scope
    assert scope["_chosen"].reference(torch.tensor([5, -3], dtype=torch.int8)).dtype == torch.int8


@pytest.mark.gpu
def test_inductor_kernels_pass_and_their_launches_count():
    from kbx.contract.attempt import Attempt
    from kbx.driver.evaluator import EvalSettings, Evaluator

    gelu = task("Activation/gelu")
    (proposal,) = build().propose(gelu, 0, [])
    with Evaluator(EvalSettings(device="cuda", workers=1)) as ev:
        (record,) = ev.evaluate([Attempt(gelu, proposal.code, "inductor")])
    assert record.status.value == "ok", f"{record.status.value}: {record.reason}\n{record.message}"
    assert record.triton_launches > 0 and record.timed


INDUCTOR_FLAGGED_BEFORE = ("Activation/relu_fp16", "Activation/selu", "Activation/gelu", "Math/add")
# Called decoys (right output with every Triton launch disabled) on an H200, 2026-12-01, with 58 more:
# the replay turned on torch's deterministic mode, on which torch.compile's guards depend.
INDUCTOR_DECOYS_BEFORE = ("Reduce/mean", "Math/mul", "Loss/mse_loss", "Fusion/fused_add_mean")


def _inductor_records(task_ids: tuple[str, ...]) -> list:
    from kbx.contract.attempt import Attempt
    from kbx.driver.evaluator import EvalSettings, Evaluator

    attempts = [Attempt(task(t), build().propose(task(t), 0, [])[0].code, "inductor") for t in task_ids]
    with Evaluator(EvalSettings(device="cuda", workers=4)) as ev:
        return ev.evaluate(attempts)


def _assert_honest(records: list) -> None:
    from kbx.core.record import Status

    for record in records:
        assert record.status is Status.OK or (record.status is Status.TIMING_SUSPECT and "speedup" in record.reason), (
            f"{record.task}: {record.status.value}: {record.reason}")


@pytest.mark.gpu
def test_inductors_own_threads_are_not_held_against_it():
    """torch.compile starts compile workers of its own; once marked `timing_suspect` ("the entry
    started background threads") on relu_fp16 and selu. Only threads a candidate starts during its
    measured repetitions count (tests/sandbox/test_quiet_gpu.py: one that does is still caught)."""
    _assert_honest(_inductor_records(INDUCTOR_FLAGGED_BEFORE))


@pytest.mark.gpu
def test_the_decoy_replay_replays_a_compiled_entry_as_it_ran():
    """The replay with Triton's launches disabled must run the code the cases ran: state that
    torch.compile guards on, changed for the replay, compiles the entry again instead."""
    _assert_honest(_inductor_records(INDUCTOR_DECOYS_BEFORE))


# Judged `no_triton` at their first perf shape on an H200 (2026-12-06, docs/BENCHMARKS.md): a case
# that raised (add, sub) or had no tensors (mul_sub) left every later call eager.
INDUCTOR_NO_TRITON_BEFORE = ("Fusion/fused_add_gelu", "Fusion/fused_sub_gelu", "Fusion/fused_mul_sub")


@pytest.mark.gpu
def test_references_stay_compiled_after_a_case_that_raised_or_had_no_tensors():
    _assert_honest(_inductor_records(INDUCTOR_NO_TRITON_BEFORE))


@pytest.mark.gpu
def test_every_launch_of_a_compiled_kernel_counts():
    """The launch check and the decoy replay both rest on the counter seeing each launch of
    Inductor's kernels (wrapped at `CachingAutotuner.run`, not at Triton's JITFunction): a compiled
    entry called on three shapes, three times each, launches nine times."""
    import torch
    import torch._inductor.runtime.triton_heuristics  # noqa: F401 - the launcher the counter wraps

    from kbx.sandbox.instrument import LaunchCounter

    counter = LaunchCounter()
    counter.install()
    add_gelu = torch.compile(lambda x, y: torch.nn.functional.gelu(x + y), dynamic=False)
    calls = 0
    try:
        for n in (3, 512 * 512, 2**24):
            x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
            for _ in range(3):
                add_gelu(x, y)
                calls += 1
        torch.cuda.synchronize()
    finally:  # this is the test process, not a worker: its other tests get the launchers unwrapped
        for cls in counter.wrapped:
            cls.run = cls.run.__wrapped__
        torch._dynamo.reset()
    assert counter.launches == calls


@pytest.fixture
def compiled(monkeypatch):
    """The proposals' torch.compile with a counting backend instead of Inductor (which writes C++ on
    a CPU): `graphs` holds each graph Dynamo compiled, `runs` one entry per execution of a graph.
    `load(task_id)` execs the proposal's module and returns its entry; Dynamo is reset around the test."""
    import torch

    def load(task_id: str):
        info = task(task_id)
        scope: dict = {}
        (proposal,) = build(mode="default").propose(info, 0, [])
        exec(compile(proposal.code, "<proposal>", "exec"), scope)  # noqa: S102 - kbx's own template
        return scope[info.spec.entry]

    state = SimpleNamespace(graphs=[], runs=[], load=load)

    def counting_backend(gm, example_inputs):
        state.graphs.append(gm)

        def run(*args):
            state.runs.append(gm)
            return gm.forward(*args)

        return run

    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, mode, dynamic: real_compile(fn, backend=counting_backend,
                                                                                 dynamic=dynamic))  # fmt: skip
    torch._dynamo.reset()
    yield state
    torch._dynamo.reset()


def test_every_signature_is_compiled_past_dynamos_default_limit(monkeypatch, compiled):
    """Dynamo runs an entry eagerly once it has compiled `recompile_limit` signatures (8 by
    default); 128 tasks' perf shapes were timed that way on an H100. The proposal's module must lift
    the limit: every one of 12 shapes is its own graph."""
    import torch

    from kbx.methods.inductor import RECOMPILE_LIMIT

    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 8)  # the default; restored afterwards
    monkeypatch.setattr(torch._dynamo.config, "accumulated_recompile_limit", 256)
    relu = compiled.load("Activation/relu")
    assert torch._dynamo.config.recompile_limit == RECOMPILE_LIMIT
    for n in range(1, 13):
        relu(torch.linspace(-1, 1, n))
    assert len(compiled.graphs) == 12


def test_a_call_that_raised_or_had_no_tensors_leaves_later_calls_compiled(compiled):
    """Dynamo runs a function eagerly for good after a call it converted without a graph. On an
    H200 (2026-12-06) add+GELU's invalid-approximate case and mul-sub's Python-number case left their
    perf shapes eager (`no_triton`). After each such call, the next new shape still runs a graph."""
    import torch

    add_gelu = compiled.load("Fusion/fused_add_gelu")
    add_gelu(torch.ones(3), torch.ones(3))
    with pytest.raises(ValueError):
        add_gelu(torch.ones(3), torch.ones(3), approximate="fast")
    add_gelu(torch.ones(5), torch.ones(5))
    mul_sub = compiled.load("Fusion/fused_mul_sub")
    assert mul_sub(2.0, 3.0, 1.0) == 5.0
    mul_sub(torch.ones(7), torch.ones(7), torch.ones(7))
    assert len(compiled.runs) == 3  # add_gelu at 3 and 5, mul_sub at 7 (1 without the reset: only the first)
