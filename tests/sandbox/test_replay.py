"""No timed call can be answered from memory (kbx.sandbox.timing), on the CPU: the real preparation and
repetitions of a fixture task's perf shape, with its real inputs, on the fake GPU of test_timing_budget
(its clock and CUDA events). Every repetition gets inputs no call has seen; the call the judge re-checks is
the fastest of those that count, copied when it returned, and compared against the reference on its own
inputs; the repeat probe names a candidate that answers repeated inputs from memory."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from kbx.contract.timing_policy import TimingPolicy
from kbx.sandbox import timing
from kbx.tasks import discover
from kbx.tasks.inputs import make_generator
from tests.conftest import FIXTURE_TASKS
from tests.sandbox.test_timing_budget import fake_gpu  # noqa: F401 - the fake GPU's fixture

TASK = discover(str(FIXTURE_TASKS))["Math/zoo_scale_add"]  # out = input * 2 + other
CASE = TASK.spec.perf[-1]
POLICY = TimingPolicy(energy_burst_ms=0.0, flush_l2_bytes=4096)  # a small flush: the fake GPU times it anyway
HONEST_MS = 0.05  # the fake GPU's time for a call that computes its output
SKIP_MS = 0.002  # ...and for one that hands back something it already had (a token launch)


def reference(seed: int) -> torch.Tensor:
    """What the judge expects from the call on `seed`'s inputs: it makes them again from the seed."""
    call = TASK.spec.make_inputs(CASE.params, make_generator(seed, "cpu"), "cpu")
    return TASK.spec.reference(*call.args)


def measure(gpu, entry, check: bool = True) -> tuple[dict, tuple, list]:
    """(row, (seed, copy) of the checked call, what every call saw: (values, id, _version, seed)) of one
    shape prepared and measured as a worker would, its calls launched on the fake GPU."""
    seen = []

    def recorded(input, other):
        seen.append((input.numpy().tobytes() + other.numpy().tobytes(), id(input), input._version))
        return entry(input, other)

    prepared = timing.prepare_shape(recorded, TASK, CASE, "cpu", POLICY, check=check)
    row, checked = timing.measure_shape(prepared, POLICY, energy=False, check=check)
    assert row["ok"], row["error"]
    return row, checked, seen


def honest(gpu, jitter: float = 0.0, rng: random.Random | None = None):
    def scale_add(input, other):
        gpu.launch(HONEST_MS * (1.0 + jitter * (rng.random() - 0.5) if rng else 1.0))
        return input * 2 + other

    return scale_add


def cached(gpu, key):
    """A result kept under `key(input, other)`, handed back (with a token launch) when the key comes again."""
    memory = {}

    def scale_add(input, other):
        k = key(input, other)
        if k in memory:
            gpu.launch(SKIP_MS)
            return memory[k]
        gpu.launch(HONEST_MS)
        memory[k] = input * 2 + other
        return memory[k]

    return scale_add


def wrong(checked: tuple) -> bool:
    seed, output = checked
    return not torch.allclose(output, reference(seed))


def test_every_repetition_computes_from_inputs_no_call_has_seen(fake_gpu):  # noqa: F811
    gpu = fake_gpu(HONEST_MS)
    row, checked, seen = measure(gpu, honest(gpu))
    repetitions = seen[-row["reps"] - 1 : -1]  # the last call is the repeat probe
    values = [v for v, _, _ in seen]
    for i, (value, ident, version) in enumerate(repetitions, start=len(seen) - row["reps"] - 1):
        assert value not in values[:i], "a repetition's inputs were seen before"
    assert len({ident for _, ident, _ in repetitions}) == 1  # the same tensor objects, with new values...
    versions = [version for _, _, version in repetitions]
    assert versions == sorted(set(versions))  # ...and a new `_version` each time
    assert seen[-1][0] == seen[-2][0]  # the probe repeats the last repetition's inputs, untouched
    assert not wrong(checked) and row["replayed"] == ""  # compared on its own inputs, and right


def test_the_seeds_are_drawn_when_the_inputs_are_made_not_derived(fake_gpu):  # noqa: F811
    gpu = fake_gpu(HONEST_MS)
    prepared = timing.prepare_shape(honest(gpu), TASK, CASE, "cpu", POLICY)
    seeds = [prepared.refresh(0) for _ in range(20)]
    assert len(set(seeds)) == len(seeds) and len({b - a for a, b in zip(seeds, seeds[1:])}) > 1
    assert POLICY.seed not in seeds and all(0 <= s < 2**timing.FRESH_SEED_BITS for s in seeds)


KEYS = {
    "tensor identity": lambda x, y: (id(x), id(y)),
    "shape": lambda x, y: tuple(x.shape),
    "call count": None,  # below: computes every third call, hands back the last output otherwise
}


def every_third_call(gpu):
    state = {"calls": 0, "last": None}

    def scale_add(input, other):
        state["calls"] += 1
        if state["last"] is not None and state["calls"] % 3:
            gpu.launch(SKIP_MS)
            return state["last"]
        gpu.launch(HONEST_MS)
        state["last"] = input * 2 + other
        return state["last"]

    return scale_add


@pytest.mark.parametrize("key", list(KEYS))
def test_a_result_kept_under_the_tensors_identity_is_the_one_checked_and_wrong(fake_gpu, key):  # noqa: F811
    gpu = fake_gpu(HONEST_MS)
    entry = every_third_call(gpu) if KEYS[key] is None else cached(gpu, KEYS[key])
    row, checked, _ = measure(gpu, entry)
    assert wrong(checked), f"{key}: the checked output is right for its inputs"
    assert row["median_ms"] == pytest.approx(SKIP_MS)  # it did gain: the check is what stops it


@pytest.mark.parametrize("key", ["_version", "sampled values", "hash of a few elements"])
def test_a_result_kept_under_what_changes_with_the_values_is_never_handed_back_but_the_probe_names_it(
        fake_gpu, key):  # noqa: F811  # fmt: skip
    gpu = fake_gpu(HONEST_MS)
    keys = {"_version": lambda x, y: (x.data_ptr(), x._version, y.data_ptr(), y._version),
            "sampled values": lambda x, y: (tuple(x.shape), x[0].item(), x[-1].item(), y[len(y) // 2].item()),
            "hash of a few elements": lambda x, y: hash(x[:8].numpy().tobytes() + y[:8].numpy().tobytes())}  # fmt: skip
    row, checked, _ = measure(gpu, cached(gpu, keys[key]))
    assert not wrong(checked) and row["median_ms"] == pytest.approx(HONEST_MS)  # it computed every repetition
    assert row["replayed"].startswith("the same inputs again took 0.0020 ms against 0.0500 ms")


def test_an_output_built_up_over_calls_is_checked_on_one_call_s_inputs(fake_gpu):  # noqa: F811
    """Each call computes a quarter of the output into a buffer it keeps, and relies on earlier calls for the rest."""
    gpu = fake_gpu(HONEST_MS)
    state = {"buffer": None, "calls": 0}

    def scale_add(input, other):
        if state["buffer"] is None:
            state["buffer"] = torch.zeros_like(input)
        part = slice(state["calls"] % 4 * len(input) // 4, (state["calls"] % 4 + 1) * len(input) // 4)
        state["buffer"][part] = input[part] * 2 + other[part]
        state["calls"] += 1
        gpu.launch(HONEST_MS / 4)
        return state["buffer"]

    _, checked, _ = measure(gpu, scale_add)
    assert wrong(checked)


SKIP_POLICIES = {
    "at random, half the calls": lambda rng, fresh_calls: rng.random() < 0.5,
    "every other call": lambda rng, fresh_calls: fresh_calls % 2 == 0,
    "one repetition only": lambda rng, fresh_calls: fresh_calls == 4,  # the first and estimating calls are 1, 2
}


@pytest.mark.parametrize("policy", list(SKIP_POLICIES))
def test_whichever_repetitions_a_candidate_skips_work_on_one_of_them_is_checked(fake_gpu, policy):  # noqa: F811
    """The check does not need to be a secret: a call that skipped work is fast, and the fastest is checked."""
    gpu = fake_gpu(HONEST_MS)
    rng, seen, skipped = random.Random(7), set(), []

    def scale_add(input, other):
        key = input.numpy().tobytes()
        fresh = key not in seen
        seen.add(key)
        if fresh and SKIP_POLICIES[policy](rng, len(seen)):
            skipped.append(key)
            gpu.launch(SKIP_MS)
            return torch.zeros_like(input)  # nothing computed
        gpu.launch(HONEST_MS)
        return input * 2 + other

    _, checked, _ = measure(gpu, scale_add)
    assert skipped and wrong(checked)


def test_work_hidden_from_the_events_does_not_make_a_call_the_fastest(fake_gpu):  # noqa: F811
    """A decoy: one call computes its output on a 'side stream' (the events see 1 us, the host waits 0.3 ms more,
    within the slack a clean repetition may have), the others hand back nothing, padded to 2 us. By its events the
    decoy is the fastest and right; counted with the host's time beyond the GPU window it is not, and a skipped
    call is checked."""
    gpu = fake_gpu(HONEST_MS)
    state = {"calls": 0}

    def scale_add(input, other):
        state["calls"] += 1
        if state["calls"] % 5 == 0:
            gpu.launch(0.001)
            gpu.hidden_until = gpu.gpu + 0.3e-3
            return input * 2 + other
        gpu.launch(SKIP_MS)
        return torch.zeros_like(input)

    _, checked, _ = measure(gpu, scale_add)
    assert wrong(checked)


def test_a_later_call_cannot_repair_the_checked_output(fake_gpu):  # noqa: F811
    """Every call returns a half-done buffer and repairs the previous one at the next call
    (tests/zoo/retroactive_fixup.py does it across cases): the checked copy was taken when its call returned."""
    gpu = fake_gpu(HONEST_MS)
    pending = []

    def scale_add(input, other):
        while pending:
            x, y, out = pending.pop()
            out.copy_(x * 2 + y)
        out = input * 2
        pending.append((input.clone(), other.clone(), out))
        gpu.launch(SKIP_MS)
        return out

    _, checked, _ = measure(gpu, scale_add)
    assert wrong(checked)


def test_an_honest_kernel_with_uneven_times_is_never_taken_for_a_replay(fake_gpu):  # noqa: F811
    for seed in range(20):
        gpu = fake_gpu(HONEST_MS)
        row, checked, _ = measure(gpu, honest(gpu, jitter=0.6, rng=random.Random(seed)))
        assert row["replayed"] == "" and not wrong(checked)


def test_the_reference_side_is_timed_on_fresh_inputs_without_copies_or_probe(fake_gpu):  # noqa: F811
    gpu = fake_gpu(HONEST_MS)
    row, checked, seen = measure(gpu, cached(gpu, lambda x, y: x[:8].numpy().tobytes()), check=False)
    assert checked == (0, None) and row["replayed"] == ""
    assert len({v for v, _, _ in seen[-row["reps"]:]}) == row["reps"] and row["refresh_ms"] >= 0.0


def test_an_in_place_op_is_checked_with_its_inputs_state_and_not_probed(fake_gpu):  # noqa: F811
    """For an op that writes its inputs the checked output includes their state after the call (the judge
    compares it with the reference's, kbx.sandbox.cases.with_state); the probe would repeat altered inputs."""
    gpu = fake_gpu(HONEST_MS)

    def scale_add_(input, other):
        gpu.launch(HONEST_MS)
        return input.mul_(2).add_(other)

    prepared = timing.prepare_shape(scale_add_, TASK, CASE, "cpu", POLICY)
    prepared.inplace = True
    row, (seed, (output, state)) = timing.measure_shape(prepared, POLICY, energy=False)
    call = TASK.spec.make_inputs(CASE.params, make_generator(seed, "cpu"), "cpu")
    assert torch.allclose(output, reference(seed)) and torch.equal(state[1], call.args[1])
    assert torch.equal(state[0], output) and row["replayed"] == ""


def test_repoint_keeps_tensor_objects_and_takes_everything_else_from_the_fresh_call():
    live = torch.zeros(3)
    twin = live
    fresh = torch.ones(4)
    out = timing.repoint((live, [twin, 1.5], {"k": torch.zeros(2)}),
                         (fresh, [torch.ones(4), 2.5], {"k": torch.ones(2)}))  # fmt: skip
    assert out[0] is live and torch.equal(live, torch.ones(4)) and live._version > 0
    assert out[1][0] is live and out[1][1] == 2.5 and torch.equal(out[2]["k"], torch.ones(2))
    other_dtype = torch.ones(2, dtype=torch.float64)
    assert timing.repoint(torch.zeros(2), other_dtype) is other_dtype  # no set_ across dtypes: the fresh tensor


def test_inputs_too_large_for_two_rotations_are_refreshed_in_the_one_there_is(fake_gpu):  # noqa: F811
    gpu = fake_gpu(HONEST_MS)
    one = dataclasses.replace(POLICY, rotation_budget_bytes=1)  # room for one rotation only
    prepared = timing.prepare_shape(honest(gpu), TASK, CASE, "cpu", one)
    assert len(prepared.calls) == 1 and prepared.row["error"] == ""
    row, checked = timing.measure_shape(prepared, one, energy=False)
    assert row["ok"] and not wrong(checked)
