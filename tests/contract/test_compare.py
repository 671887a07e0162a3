"""The comparison rules every verdict rests on (kbx.contract.compare), against hand-computed cases.

Values are chosen to be exactly representable in their dtype, so each boundary below is the rule's
boundary and not a rounding accident: fp32 passes when |got - expected| <= atol + rtol * |expected|
(+ rms_atol * rms(expected) for matrix products), with atol = rtol = 1e-5 by default.
"""

from __future__ import annotations

import math

import pytest
import torch

from kbx.contract.compare import EXCEPTION_KEY, SHOWN_INDICES, compare
from kbx.core.record import Status
from kbx.tasks import Tolerance, matmul_tolerance
from kbx.tasks.spec import TF32_RMS_ATOL

DEFAULT = Tolerance()
INF, NAN = math.inf, math.nan


def status(expected, got, tol: Tolerance = DEFAULT) -> Status:
    return compare(expected, got, tol).status


def t(values, dtype=torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


# --- floating point: atol + rtol * |expected| -----------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "got", "want"),
    [
        (1.0, 1.0, Status.OK),
        (1.0, 1.0 + 2**-16, Status.OK),  # 1.53e-5 <= 1e-5 + 1e-5 * 1 = 2e-5
        (1.0, 1.0 + 2**-15, Status.MISMATCH),  # 3.05e-5 > 2e-5
        (1.0, 1.0 - 2**-16, Status.OK),
        (100.0, 100.0 + 2**-10, Status.OK),  # 9.77e-4 <= 1e-5 + 1e-3 = 1.01e-3
        (100.0, 100.0 + 2**-10 + 2**-14, Status.MISMATCH),  # 1.04e-3 > 1.01e-3
        (0.0, 2**-17, Status.OK),  # 7.6e-6 <= atol 1e-5 at zero
        (0.0, 2**-16, Status.MISMATCH),  # 1.53e-5 > 1e-5
        (-1.0, 1.0, Status.MISMATCH),
    ],
)
def test_fp32_atol_rtol(expected, got, want):
    assert status(t([expected]), t([got])) is want


def test_fp32_custom_tolerance():
    tol = Tolerance(atol={"float32": 0.5}, rtol={"float32": 0.0})
    assert status(t([1.0]), t([1.5]), tol) is Status.OK
    assert status(t([1.0]), t([1.5 + 2**-20]), tol) is Status.MISMATCH


def test_fp64_default_is_tighter():
    assert status(t([1.0], torch.float64), t([1.0 + 1.5e-7], torch.float64)) is Status.OK  # <= 2e-7
    assert status(t([1.0], torch.float64), t([1.0 + 3e-7], torch.float64)) is Status.MISMATCH


# --- NaN and infinities ---------------------------------------------------------------------------


def test_nan_positions_must_agree():
    assert status(t([1.0, NAN, 3.0]), t([1.0, NAN, 3.0])) is Status.OK
    out = compare(t([1.0, NAN, 3.0]), t([1.0, 2.0, 3.0]), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.count == 1 and out.mismatch.indices == ((1,),)
    out = compare(t([1.0, 2.0, 3.0]), t([1.0, NAN, 3.0]), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.count == 1
    assert math.isnan(out.mismatch.got[0]) and out.mismatch.max_abs_err == INF


@pytest.mark.parametrize(
    ("expected", "got", "want"),
    [
        ([INF, -INF], [INF, -INF], Status.OK),
        ([INF], [-INF], Status.MISMATCH),
        ([-INF], [INF], Status.MISMATCH),
        ([INF], [3.0e38], Status.MISMATCH),  # no tolerance around infinity
        ([INF], [NAN], Status.MISMATCH),
        ([3.0e38], [INF], Status.MISMATCH),
        ([1.0], [INF], Status.MISMATCH),
    ],
)
def test_infinities_must_match_exactly(expected, got, want):
    assert status(t(expected), t(got)) is want


# --- exact types ----------------------------------------------------------------------------------


def test_integers_are_exact():
    assert status(t([1, 2, 3], torch.int64), t([1, 2, 3], torch.int64)) is Status.OK
    out = compare(t([1, 2, 3], torch.int64), t([1, 2, 4], torch.int64), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.count == 1 and out.mismatch.indices == ((2,),)
    # one apart beyond float64's integer range: still a difference
    assert status(t([2**53], torch.int64), t([2**53 + 1], torch.int64)) is Status.MISMATCH
    assert status(t([7], torch.int8), t([7], torch.int8)) is Status.OK


def test_bools_are_exact():
    assert status(t([True, False]), t([True, False])) is Status.OK
    out = compare(t([True, False]), t([True, True]), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.count == 1 and out.mismatch.indices == ((1,),)


# --- complex: real and imaginary parts each within tolerance --------------------------------------


def test_complex():
    e = t([1 + 1j, 2 - 3j], torch.complex64)
    assert status(e, t([1 + 1j, 2 - 3j], torch.complex64)) is Status.OK
    assert status(e, t([1 + (1 + 2**-16) * 1j, 2 - 3j], torch.complex64)) is Status.OK  # imag within 2e-5
    out = compare(e, t([1 + 1.5j, 2 - 3j], torch.complex64), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.count == 1 and out.mismatch.indices == ((0,),)
    out = compare(e, t([1 + 1j, 2.5 - 3j], torch.complex64), DEFAULT)  # real part off
    assert out.status is Status.MISMATCH and out.mismatch.indices == ((1,),)
    assert status(e, t([1 - 1j, 2 - 3j], torch.complex64)) is Status.MISMATCH  # conjugate is wrong


# --- half precision: two units in the last place --------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "ulp"),
    [(torch.float16, 2.0**-10), (torch.bfloat16, 2.0**-7)],  # ulp just above 1.0
)
def test_half_precision_two_ulp_rule(dtype, ulp):
    one = t([1.0], dtype)
    assert status(one, t([1.0 + ulp], dtype)) is Status.OK
    assert status(one, t([1.0 + 2 * ulp], dtype)) is Status.OK
    assert status(one, t([1.0 + 3 * ulp], dtype)) is Status.MISMATCH
    assert status(one, t([1.0 - 2 * ulp], dtype)) is Status.OK  # 4 ulps below 1.0, still 2 * eps * |1.0|
    assert status(one, t([1.0 - 3 * ulp], dtype)) is Status.MISMATCH


# --- matrix products: rms_atol scales with the output's magnitude ---------------------------------


def test_rms_atol_allowance():
    expected = t([3.0, 4.0, 0.0, 0.0])  # rms = sqrt((9 + 16) / 4) = 2.5
    allowance = 1e-5 + TF32_RMS_ATOL * 2.5  # 0.02442 at expected == 0
    tol = matmul_tolerance()
    assert tol.for_dtype("float32") == (1e-5, 1e-5, TF32_RMS_ATOL)
    assert status(expected, t([3.0, 4.0, allowance - 1e-4, 0.0]), tol) is Status.OK
    assert status(expected, t([3.0, 4.0, allowance + 1e-4, 0.0]), tol) is Status.MISMATCH
    assert status(expected, t([3.0, 4.0, allowance - 1e-4, 0.0]), DEFAULT) is Status.MISMATCH  # no allowance
    # 3.024 is within 1e-5 + 1e-5 * 3 + 0.0244 only thanks to the rms term
    assert status(expected, t([3.0 + 0.024, 4.0, 0.0, 0.0]), tol) is Status.OK


def test_rms_scale_ignores_non_finite_elements():
    tol = matmul_tolerance()
    expected = t([INF, 2.0, 2.0, 0.0, NAN])  # rms over the finite elements: sqrt(8 / 3) = 1.633
    allowance = 1e-5 + TF32_RMS_ATOL * math.sqrt(8 / 3)
    assert status(expected, t([INF, 2.0, 2.0, allowance - 1e-4, NAN]), tol) is Status.OK
    assert status(expected, t([INF, 2.0, 2.0, allowance + 1e-4, NAN]), tol) is Status.MISMATCH


# --- structure: shape, dtype, containers, exceptions ----------------------------------------------


def test_wrong_shape_and_dtype():
    assert status(t([1.0, 2.0, 3.0]), t([[1.0, 2.0, 3.0]])) is Status.WRONG_SHAPE
    assert status(t([1.0, 2.0, 3.0]), t([1.0, 2.0, 3.0], torch.float64)) is Status.WRONG_DTYPE
    assert status(t([1.0, 2.0, 3.0]), t([[1.0, 2.0, 3.0]], torch.float64)) is Status.WRONG_SHAPE  # shape first
    assert status(t([1, 2], torch.int64), t([1, 2], torch.int32)) is Status.WRONG_DTYPE
    assert status(t(1.0), t([1.0])) is Status.WRONG_SHAPE  # 0-d vs 1-d


def test_wrong_types():
    assert status(t([1.0]), [1.0]) is Status.WRONG_TYPE
    assert status(t([1.0]), None) is Status.WRONG_TYPE
    assert status(t([1.0]), 1.0) is Status.WRONG_TYPE
    assert status((t([1.0]),), t([1.0])) is Status.WRONG_TYPE
    assert status({"a": t([1.0])}, {"b": t([1.0])}) is Status.WRONG_TYPE
    assert status({"a": t([1.0])}, [t([1.0])]) is Status.WRONG_TYPE


def test_exceptions_compare_by_type():
    raised = {EXCEPTION_KEY: "ValueError"}
    assert status(raised, {EXCEPTION_KEY: "ValueError"}) is Status.OK
    out = compare(raised, {EXCEPTION_KEY: "TypeError"}, DEFAULT)
    assert out.status is Status.MISMATCH and "ValueError" in out.reason
    assert status(raised, t([1.0])) is Status.MISMATCH  # returned instead of raising
    assert status(t([1.0]), {EXCEPTION_KEY: "ValueError"}) is Status.WRONG_TYPE  # raised instead of returning


def test_nested_containers():
    expected = (t([1.0, 2.0]), [t([3], torch.int64), 2.5], {"a": t([[1.0]]), "b": None})
    same = (t([1.0, 2.0]), [t([3], torch.int64), 2.5], {"a": t([[1.0]]), "b": None})
    assert status(expected, same) is Status.OK
    assert status(expected, list(same)) is Status.OK  # tuple and list are both sequences
    bad = (t([1.0, 2.0]), [t([3], torch.int64), 2.5], {"a": t([[1.5]]), "b": None})
    out = compare(expected, bad, DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.leaf == "output[2]['a']"
    assert out.mismatch.indices == ((0, 0),) and out.mismatch.got == (1.5,)
    out = compare(expected, (same[0], [t([4], torch.int64), 2.5], same[2]), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.leaf == "output[1][0]"
    out = compare(expected, (same[0], [same[1][0], 2.6], same[2]), DEFAULT)
    assert out.status is Status.MISMATCH and "output[1][1]" in out.reason
    assert status(expected, same[:2]) is Status.WRONG_SHAPE  # fewer items
    assert status(expected, (same[0], [same[1][0]], same[2])) is Status.WRONG_SHAPE
    assert status(expected, (same[0], same[1], {"a": t([[1.0]], torch.float64), "b": None})) is Status.WRONG_DTYPE


# --- Python scalars -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "got", "want"),
    [
        (1.0, 1.0 + 1.5e-5, Status.OK),  # <= 1e-5 + 1e-5 * 1
        (1.0, 1.0 + 2.5e-5, Status.MISMATCH),
        (1000.0, 1000.01, Status.OK),  # 0.01 <= 1e-5 + 1e-2
        (1000.0, 1000.011, Status.MISMATCH),
        (1.0, 1, Status.OK),  # an int where a float is expected, same value
        (1.0, True, Status.MISMATCH),  # a bool is not a number here
        (NAN, NAN, Status.OK),
        (1.0, NAN, Status.MISMATCH),
        (3, 3, Status.OK),
        (3, 3.0, Status.MISMATCH),  # ints are exact and typed
        (3, 4, Status.MISMATCH),
        (True, True, Status.OK),
        (True, 1, Status.MISMATCH),
        (None, None, Status.OK),
        ("abc", "abc", Status.OK),
        ("abc", "abd", Status.MISMATCH),
    ],
)
def test_python_scalars(expected, got, want):
    assert status(expected, got) is want


# --- the mismatch report --------------------------------------------------------------------------


def test_mismatch_report_2d():
    expected = t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = t([[1.0, 2.0, 3.75], [4.0, 5.0, 7.0]])
    out = compare(expected, got, DEFAULT)
    m = out.mismatch
    assert out.status is Status.MISMATCH
    assert (m.leaf, m.count, m.numel) == ("output", 2, 6)
    assert m.indices == ((0, 2), (1, 2))
    assert m.got == (3.75, 7.0) and m.expected == (3.0, 6.0)
    assert m.max_abs_err == 1.0  # at (1, 2)
    assert m.max_rel_err == 0.25  # at (0, 2): 0.75 / 3
    assert "2 of 6 elements differ" in out.reason


def test_mismatch_report_lists_at_most_a_few_indices():
    expected = torch.zeros(4, 5)
    got = expected.clone()
    got[1:3, :] = 1.0  # 10 wrong elements, in row-major order from (1, 0)
    m = compare(expected, got, DEFAULT).mismatch
    assert m.count == 10 and len(m.indices) == SHOWN_INDICES
    assert m.indices == ((1, 0), (1, 1), (1, 2), (1, 3), (1, 4))
    assert m.max_rel_err == pytest.approx(1.0 / torch.finfo(torch.float64).tiny)


def test_scalar_tensor_report():
    out = compare(t(2.0), t(3.0), DEFAULT)
    assert out.status is Status.MISMATCH and out.mismatch.count == 1 and out.mismatch.indices == ((),)


# --- the poison pattern: elements the kernel never wrote ------------------------------------------


def _poison(x: torch.Tensor, where: slice) -> torch.Tensor:
    out = x.clone()
    out.view(torch.uint8).view(x.numel(), x.element_size())[where] = 0xFF
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32])
def test_poison_pattern_is_unwritten_output(dtype):
    expected = torch.arange(1, 9).to(dtype)
    got = _poison(expected, slice(5, None))  # the last three elements still hold 0xFF bytes
    out = compare(expected, got, DEFAULT)
    assert out.status is Status.UNWRITTEN_OUTPUT and out.mismatch.count == 3
    assert out.mismatch.indices == ((5,), (6,), (7,))
    assert "never written" in out.reason


def test_poison_mixed_with_wrong_values_is_a_mismatch():
    expected = torch.arange(1.0, 9.0)
    got = _poison(expected, slice(5, None))
    got[0] = 100.0  # one element written wrongly: not only unwritten memory
    assert status(expected, got) is Status.MISMATCH


def test_poison_where_nan_is_expected_is_fine():
    expected = t([1.0, NAN])
    assert status(expected, _poison(expected, slice(1, None))) is Status.OK  # 0xFF.. is a NaN
    assert status(t([True, False]), t([True, True])) is Status.MISMATCH  # bools are never "poison"


def test_cuda_only_errors_are_unsupported_on_cpu_not_wrong():
    from kbx.sandbox.judging import _error_status

    cuda_only = {"type": "AssertionError", "message": "AssertionError: Torch not compiled with CUDA enabled", "oom": False}
    genuine = {"type": "ValueError", "message": "ValueError: Conflicting meta-parameters: BLOCK_K", "oom": False}
    assert _error_status(cuda_only, "cpu") is Status.UNSUPPORTED_ON_CPU
    assert _error_status(cuda_only, "cuda:0") is Status.RUNTIME_ERROR
    assert _error_status(genuine, "cpu") is Status.RUNTIME_ERROR


def test_comparison_in_chunks_gives_the_same_verdict_as_whole(monkeypatch):
    """Perf-shape outputs are compared CHUNK_ELEMENTS at a time (the judge's GPU memory); the RMS
    floor still spans the whole tensor, and a bad element in any chunk is found."""
    from kbx.contract import compare as compare_module

    gen = torch.Generator().manual_seed(0)
    expected = torch.randn(1000, generator=gen)
    got = expected + 1e-3 * torch.randn(1000, generator=gen)
    got[777] += 1.0
    tol = Tolerance(atol={"float32": 0.0}, rtol={"float32": 0.0}, rms_atol={"float32": 5e-3})
    whole = compare(expected, got, tol)
    monkeypatch.setattr(compare_module, "CHUNK_ELEMENTS", 64)
    chunked = compare(expected, got, tol)
    assert whole.status is chunked.status is Status.MISMATCH
    assert whole.mismatch.count == chunked.mismatch.count == 1 and chunked.mismatch.indices == ((777,),)
    z = torch.complex(expected, expected)
    assert compare(z, z.clone(), tol).ok


# --- poisoning the allocator's cached free blocks (kbx.sandbox.instrument) ---------------------------


def test_poisoning_takes_every_cached_free_block_of_its_device_and_stream():
    """The requests that fill the caching allocator's free blocks: one per block, exactly its size,
    on this device and stream only; a small-pool block over 1 MiB in pieces the small pool serves."""
    from kbx.sandbox.instrument import SMALL_REQUEST_MAX_BYTES, cached_fill_sizes

    def seg(kind, blocks, device=0, stream=0):
        return {"device": device, "stream": stream, "segment_type": kind,
                "blocks": [{"size": size, "state": state} for size, state in blocks]}  # fmt: skip

    segments = [
        seg("small", [(512, "active_allocated"), (512, "inactive"), (1536, "inactive"),
                      (2**21 - 2560, "active_allocated")]),  # fmt: skip
        seg("small", [(512, "active_allocated"), (2**21 - 512, "inactive")]),
        seg("large", [(2**22, "active_allocated"), (18 * 2**20, "inactive")]),
        seg("small", [(1024, "inactive")], device=1),  # another GPU's
        seg("small", [(1024, "inactive")], stream=7),  # another stream's: never served to this one
    ]
    sizes = cached_fill_sizes(segments, device_index=0, stream=0)
    piece = SMALL_REQUEST_MAX_BYTES
    assert sizes == [512, 1536, piece, piece, 2**21 - 512 - 2 * piece, 18 * 2**20]
    assert all(s <= piece for s in sizes[:5]) and all(s % 512 == 0 for s in sizes)


def test_outputs_copy_a_tensor_listed_twice_once_and_keep_distinct_tensors_apart(tmp_path):
    """An in-place op's result lists its parameter twice (returned, and as state): one copy, saved
    once; a view with other strides, another input, or a slice stays a copy of its own."""
    from kbx.sandbox.cases import to_plain, with_state

    param, grad, buf = torch.randn(2**16), torch.randn(2**16), torch.randn(2**16)
    (ret_p, ret_b), (st_p, st_g, st_b) = to_plain(with_state((param, buf), (param, grad, buf), {}))
    assert ret_p is st_p and ret_b is st_b and st_g is not st_p
    assert ret_p.data_ptr() != param.data_ptr() and torch.equal(ret_p, param)  # still a copy
    whole, grid, head, tail = to_plain((param, param.view(2, -1), param[:4], param[4:]))
    assert whole is not grid and head is not tail and torch.equal(tail, param[4:])
    torch.save((ret_p, st_p), tmp_path / "both.pt")
    torch.save((ret_p,), tmp_path / "one.pt")
    assert (tmp_path / "both.pt").stat().st_size < 1.1 * (tmp_path / "one.pt").stat().st_size


def test_the_judge_reads_a_mapped_outputs_file_as_it_reads_a_copied_one(tmp_path):
    from kbx.sandbox.judge import Judge

    path = tmp_path / "perf_outputs.pt"
    outputs = {"n2^10": {"seed": 3, "output": (torch.randn(1024), torch.arange(5))}}
    torch.save(outputs, path)
    copied, mapped = Judge.read(str(path)), Judge.read(str(path), mmap=True)
    for got in (copied, mapped):
        assert got["n2^10"]["seed"] == 3
        assert all(torch.equal(a, b) for a, b in zip(got["n2^10"]["output"], outputs["n2^10"]["output"], strict=True))
    path.write_bytes(b"not a torch file")
    assert isinstance(Judge.read(str(path), mmap=True), Exception)
