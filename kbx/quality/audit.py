"""Tolerance audit: does each task's tolerance admit an honest kernel and reject a wrong one?

For every correctness case (and, on request, every perf shape) the reference runs on the same
inputs twice: in the task's dtypes, exactly as the judge computes it, and with every floating
input raised to float64 (complex to complex128), the closest to exact arithmetic the same code
gives. Rounded to the task's dtype, the float64 answer is what a perfectly accurate kernel would
return. The judge's own comparison (kbx.contract.compare) must accept it with HEADROOM to spare: a
real kernel rounds too, by about as much as the reference does, so its distance from the
reference can reach twice the reference's own error.

A second honest kernel is modelled where the reference multiplies matrices or convolves in fp32:
the same reference with the operands of those products truncated to TF32, as Triton's `tl.dot`
hands them to an NVIDIA GPU's tensor cores by default (its errors err toward zero and add up,
where rounding's cancel: measured on an H200, docs/BENCHMARKS.md 2026-11-28). On a CUDA device the
real TF32 path of torch is used instead (cuBLAS and cuDNN round), a milder model.

Then the comparison must reject the reference's own output made wrong on purpose: a few elements
moved by PERTURB_FACTOR times their bound, and every element scaled by a relative bias of
PERTURB_FACTOR times the bound at the output's rms. A rule that accepts those judges nothing.

Where float64 is not meaningful the row says so instead of passing silently: stochastic outputs
(judged by the task's distributional check), integer and bool outputs (exact), references that
raise (judged by exception type), and references that cannot run in float64.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable

import torch

from kbx.tasks import identities
from kbx.tasks.inputs import make_generator
from kbx.tasks.spec import DEFAULT_TOLERANCES, FIXED, Case, TaskInfo, Tolerance

HEADROOM = 2.0  # an honest error must stay within bound / HEADROOM
PERTURB_FACTOR = 10.0  # a deliberately wrong output is this many bounds away from the reference
PERTURBED_ELEMENTS = 3  # elements moved by the spike perturbation, spread evenly over the output
PERTURB_SIGNS_SEED = 1  # the random signs of the entrywise perturbation of identity-judged outputs
AUDIT_SEEDS = (0, 1)  # seeds for random cases, as the self-check uses; fixed cases and perf shapes use the first
TF32_DROPPED_BITS = 13  # fp32 keeps 23 explicit mantissa bits, TF32 10

# Judged by: how the judge decides this case, and so what the audit could measure.
VALUES = "values"  # elementwise tolerance on floating outputs: float64 measured
EXACT = "exact"  # integer and bool outputs only: must match exactly, float64 measured
DISTRIBUTION = "distribution"  # the task's stochastic check accepts or rejects; no float64 truth exists
EXCEPTION = "exception"  # the reference raises; compared by exception type
NO_FLOAT64 = "no float64"  # the reference does not run in higher precision; honest error unmeasured
DTYPE_BOUND = "dtype-bound"  # the task declares the expected output defined by its dtype (Task.dtype_bound)
IDENTITY = "identity"  # the task's identity checks (kbx.tasks.identities): error / bound measured like a tolerance

OK, TOO_TIGHT, TOO_LOOSE, NOT_MEASURED = "ok", "too tight", "too loose", "n/a"
AUDIT_ERROR = "audit error"  # the audit itself failed (e.g. out of memory): no statement about the tolerance
VERDICT_ORDER = (TOO_TIGHT, TOO_LOOSE, AUDIT_ERROR, NOT_MEASURED, OK)  # worst first, for merging seeds
FAILING = (TOO_TIGHT, TOO_LOOSE, AUDIT_ERROR)

UPCAST = {
    torch.float16: torch.float64,
    torch.bfloat16: torch.float64,
    torch.float32: torch.float64,
    torch.complex64: torch.complex128,
}
HALF_TO_FP32 = {torch.float16: torch.float32, torch.bfloat16: torch.float32}

# Ops whose fp32 operands TF32 rounds: positional operand indices and keyword names ("*": all tensors).
TF32_OPERANDS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    **{name: ((0, 1), ("input", "other", "mat2", "tensor")) for name in ("matmul", "mm", "bmm", "__matmul__", "__rmatmul__")},
    **{name: ((1, 2), ("mat1", "mat2", "batch1", "batch2")) for name in ("addmm", "baddbmm", "addbmm")},
    **{name: ((0, 1), ("input", "weight")) for name in (
        "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")},
    "scaled_dot_product_attention": ((0, 1, 2), ("query", "key", "value")),
    "einsum": ((), ("*",)),
    "tensordot": ((0, 1), ("a", "b")),
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class AuditRow:
    """One case of one task. Ratios are error / bound (NaN where not measured); 1.0 is the edge."""

    task: str
    case: str
    kind: str
    extra: bool
    dtype: str
    judged: str
    honest_ratio: float
    tf32_ratio: float
    rejected: str  # "yes", "no", or "n/a" (nothing to perturb)
    verdict: str
    note: str = ""
    seeds: int = 1


def audit_task(info: TaskInfo, device: str = "cpu", perf_shapes: int = 0, tf32: bool = True) -> list[AuditRow]:
    """One row per correctness case and per audited perf shape (the first `perf_shapes`, smallest first).

    The judge also checks the first perf shape for correctness, but perf shapes are GPU-sized: on
    a CPU auditing them is slow, so they are opt-in.
    """
    spec = info.spec
    runs: list[tuple[Case, int]] = [(c, s) for c in spec.cases for s in (AUDIT_SEEDS[:1] if c.kind == FIXED else AUDIT_SEEDS)]
    runs += [(c, AUDIT_SEEDS[0]) for c in spec.perf[:perf_shapes]]
    by_case: dict[str, list[AuditRow]] = {}
    for case, seed in runs:
        by_case.setdefault(case.name, []).append(audit_case(info, case, seed, device, tf32))
    return [merge_seeds(rows) for rows in by_case.values()]


def audit_in_worker(task_id: str, device: str, perf_shapes: int, tf32: bool, cpu_threads: int):
    """One task's rows and seconds, in a worker process (which loads the task itself: specs do not pickle)."""
    import time

    from kbx.tasks.registry import discover

    torch.set_num_threads(cpu_threads)  # on a GPU too: the workers share the host's cores, never oversubscribe them
    started = time.perf_counter()
    return audit_task(discover()[task_id], device, perf_shapes, tf32), time.perf_counter() - started


def audit_case(info: TaskInfo, case: Case, seed: int, device: str, tf32: bool) -> AuditRow:
    row = dict(task=info.id, case=case.name, kind=case.kind, extra=case.extra)
    try:
        return _audit_case(info, case, seed, device, tf32, row)
    except Exception as exc:  # noqa: BLE001 - the audit's own failure (e.g. out of memory) is a row, never a verdict
        return AuditRow(**row, dtype="-", judged=NO_FLOAT64, honest_ratio=math.nan, tf32_ratio=math.nan,
                        rejected="n/a", verdict=AUDIT_ERROR,
                        note=f"audit failed: {type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}")  # fmt: skip


def _audit_case(info, case, seed, device, tf32, row) -> AuditRow:
    from kbx.contract.compare import EXCEPTION_KEY, structure_matches

    spec = info.spec
    counter = Tf32Products(round_operands=False)
    expected = run_reference(info, case, seed, device, mode=counter)
    if isinstance(expected, dict) and EXCEPTION_KEY in expected:
        return _exception_row(info, case, seed, device, expected[EXCEPTION_KEY], row)
    dtype = ",".join(sorted(dtypes_of(expected))) or ",".join(spec.dtypes)
    if spec.stochastic is not None:
        call = spec.make_inputs(case.params, make_generator(seed, device), device)
        with identities.measured() as seen:
            reason = spec.stochastic(call, expected)
        if reason is not None and seen:  # identity checks (kbx.tasks.identities): measured against their bounds
            tf32_out = run_tf32(info, case, seed, device) if tf32 and counter.products else None
            return _identity_row(info, case, seed, device, call, expected, row, dtype, tf32_out)
        if reason is not None:

            def accepts(got) -> bool:
                return structure_matches(expected, got).ok and spec.stochastic(call, got) == ""

            rejected = perturbation_rejected(expected, spec.tolerance, accepts)
            return AuditRow(**row, dtype=dtype, judged=DISTRIBUTION, honest_ratio=math.nan, tf32_ratio=math.nan,
                            rejected=rejected, verdict=OK if reason == "" else TOO_TIGHT,
                            note=f"reference rejected by its own check: {reason}" if reason else "")  # fmt: skip
    judge = _judge(expected, spec.tolerance)
    rejected = perturbation_rejected(expected, spec.tolerance, judge)
    bound_reason = spec.dtype_bound.get(case.name, spec.dtype_bound.get("*", ""))
    if bound_reason:
        return AuditRow(**row, dtype=dtype, judged=DTYPE_BOUND, honest_ratio=math.nan, tf32_ratio=math.nan,
                        rejected=rejected, verdict=TOO_LOOSE if rejected == "no" else NOT_MEASURED,
                        note=bound_reason)  # fmt: skip
    try:
        truth, precision = run_higher(info, case, seed, device)
    except Exception as exc:  # noqa: BLE001 - a reference that cannot run in float64 is reported, not skipped
        return AuditRow(**row, dtype=dtype, judged=NO_FLOAT64, honest_ratio=math.nan, tf32_ratio=math.nan,
                        rejected=rejected, verdict=TOO_LOOSE if rejected == "no" else NOT_MEASURED,
                        note=f"float64 reference fails: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")  # fmt: skip
    notes = [] if precision == "float64" else [f"truth in {precision}"]
    honest_ok, honest = _honest(expected, truth, spec.tolerance, notes, "float64")
    tf32_ok, tf32_ratio = True, math.nan
    if tf32 and counter.products:
        tf32_ok, tf32_ratio = _honest(expected, run_tf32(info, case, seed, device), spec.tolerance, notes, "TF32")
    verdict = OK
    if not (honest_ok and tf32_ok):
        verdict = TOO_TIGHT
    elif rejected == "no":
        verdict = TOO_LOOSE
    floating = any(d.startswith(("float", "complex")) for d in dtypes_of(expected)) or isinstance(expected, float)
    return AuditRow(**row, dtype=dtype, judged=VALUES if floating else EXACT, honest_ratio=honest, tf32_ratio=tf32_ratio,
                    rejected=rejected, verdict=verdict, note="; ".join(notes))  # fmt: skip


def _identity_row(info, case, seed, device, call, expected, row, dtype, tf32_out=None) -> AuditRow:
    """A task judged by identities with size- and condition-scaled bounds: the reference and the float64
    answer rounded to its dtypes must pass with HEADROOM, and so must the reference with its fp32
    products in TF32 (`tf32_out`, where it has any); outputs PERTURB_FACTOR bounds off must fail."""
    check = info.spec.stochastic
    outputs = [("reference", expected)]
    notes = []
    try:
        outputs.append(("float64", cast_like(run_higher(info, case, seed, device)[0], expected)))
    except Exception as exc:  # noqa: BLE001 - then only the reference is measured, and the row says so
        notes.append(f"float64 reference fails: {type(exc).__name__}")
    honest, bound = 0.0, 0.0
    for label, got in outputs:
        reason, seen = identities.measure(check, call, got)
        ratio = max((m.ratio for m in seen), default=0.0)
        bound = max([bound, *(m.bound for m in seen)])
        honest = max(honest, ratio if not reason else math.inf)
        if reason or ratio > 1.0 / HEADROOM:
            notes.append(f"{label}: {reason or f'identity error {ratio:.2g} of its bound'}")
    tf32_ratio = math.nan
    if tf32_out is not None:
        reason, seen = identities.measure(check, call, cast_like(tf32_out, expected))
        tf32_ratio = max((m.ratio for m in seen), default=0.0) if not reason else math.inf
        if tf32_ratio > 1.0 / HEADROOM:
            notes.append(f"TF32: {reason or f'identity error {tf32_ratio:.2g} of its bound'}")
    wrong = identity_perturbations(expected, bound)
    rejected = "n/a" if not wrong else ("no" if any(check(call, w) == "" for w in wrong) else "yes")
    too_tight = honest > 1.0 / HEADROOM or tf32_ratio > 1.0 / HEADROOM  # a NaN ratio (no TF32 model) is not
    verdict = TOO_TIGHT if too_tight else (TOO_LOOSE if rejected == "no" else OK)
    return AuditRow(**row, dtype=dtype, judged=IDENTITY, honest_ratio=honest, tf32_ratio=tf32_ratio, rejected=rejected,
                    verdict=verdict, note="; ".join(notes))  # fmt: skip


def identity_perturbations(value, bound: float) -> list:
    """Two wrong copies of an output judged by identities with relative bound `bound`: every floating
    factor scaled by 1 + PERTURB_FACTOR * bound, and each entry by 1 +- PERTURB_FACTOR * bound (random signs).
    Multiplicative, so exact structure (zeros, unit diagonals, integer pivots) is kept and only the identities can tell."""
    if bound <= 0.0:
        return []
    signs = torch.Generator().manual_seed(PERTURB_SIGNS_SEED)

    def random_signs(t: torch.Tensor) -> torch.Tensor:
        return (2 * torch.randint(0, 2, t.shape, generator=signs) - 1).double().to(t.device)

    step = PERTURB_FACTOR * bound
    return [_scale_floats(value, lambda t: 1.0 + step), _scale_floats(value, lambda t: 1.0 + step * random_signs(t))]


def _scale_floats(value, factor: Callable):
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()) and value.numel():
        wide = value.to(torch.complex128 if value.is_complex() else torch.float64)
        return (wide * torch.as_tensor(factor(value), dtype=torch.float64, device=value.device)).to(value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_scale_floats(v, factor) for v in value)
    return value


def _honest(expected, other, tol: Tolerance, notes: list[str], label: str) -> tuple[bool, float]:
    """Whether the judge accepts `other` (rounded to the expected dtypes) with HEADROOM, and the error ratio."""
    from kbx.contract.compare import compare

    got = cast_like(other, expected)
    ratio = error_ratio(expected, got, tol)
    outcome = compare(expected, got, scaled(tol, 1.0 / HEADROOM))
    if not outcome.ok:
        notes.append(f"{label}: {outcome.reason[:120]}")
    return outcome.ok, ratio


def _exception_row(info, case, seed, device, error: str, row) -> AuditRow:
    from kbx.contract.compare import EXCEPTION_KEY

    try:
        truth, _ = run_higher(info, case, seed, device)
    except Exception as exc:  # noqa: BLE001 - the float64 run raising is the expected outcome here
        truth = {EXCEPTION_KEY: type(exc).__name__}
    same = isinstance(truth, dict) and truth.get(EXCEPTION_KEY) == error
    note = f"raises {error}" + ("" if same else "; float64 run does not raise the same")
    return AuditRow(**row, dtype=",".join(info.spec.dtypes), judged=EXCEPTION, honest_ratio=0.0 if same else math.inf,
                    tf32_ratio=math.nan, rejected="yes", verdict=OK if same else TOO_TIGHT, note=note)  # fmt: skip


def merge_seeds(rows: list[AuditRow]) -> AuditRow:
    """The worst of a case's seeds: largest ratios, any unrejected perturbation, worst verdict."""
    first = rows[0]
    verdict = min((r.verdict for r in rows), key=VERDICT_ORDER.index)
    rejected = "no" if any(r.rejected == "no" for r in rows) else ("yes" if any(r.rejected == "yes" for r in rows) else "n/a")
    notes = list(dict.fromkeys(r.note for r in rows if r.note))
    return dataclasses.replace(first, honest_ratio=_worst(r.honest_ratio for r in rows),
                               tf32_ratio=_worst(r.tf32_ratio for r in rows), rejected=rejected, verdict=verdict,
                               note=" | ".join(notes), seeds=len(rows))  # fmt: skip


def _worst(values) -> float:
    measured = [v for v in values if not math.isnan(v)]
    return max(measured) if measured else math.nan


# ---- running the reference ----------------------------------------------------------------------


def run_reference(info: TaskInfo, case: Case, seed: int, device: str, convert: Callable | None = None,
                  mode: torch.overrides.TorchFunctionMode | None = None):
    """The reference's output as the judge sees it; raising gives the exception key.

    `convert` maps the inputs first (to float64); `mode` wraps the reference call only, never the
    input builder, so products made while building inputs are neither counted nor rounded.
    """
    from kbx.contract.compare import EXCEPTION_KEY
    from kbx.sandbox.cases import to_plain, with_state

    spec = info.spec
    call = spec.make_inputs(case.params, make_generator(seed, device), device)
    if convert is not None:
        call = dataclasses.replace(call, args=convert(call.args), kwargs=convert(dict(call.kwargs)))
    try:
        with torch.no_grad(), mode if mode is not None else contextlib.nullcontext():
            out = spec.reference(*call.args, **call.kwargs)
        # on the audit's device, as the judge holds its reference and hands outputs to the task's checks
        return to_plain(with_state(out, call.args, call.kwargs) if spec.inplace else out, device=device)
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reference may raise by design (compared by type)
        if convert is not None:
            raise
        return {EXCEPTION_KEY: type(exc).__name__}


def run_higher(info: TaskInfo, case: Case, seed: int, device: str):
    """The reference in float64; for half-precision tasks whose code refuses float64, in float32."""
    try:
        return run_reference(info, case, seed, device, lambda v: convert_floats(v, UPCAST)), "float64"
    except Exception as exc:
        if not any(d in info.spec.dtypes for d in ("float16", "bfloat16")):
            raise
        first = exc
    try:
        return run_reference(info, case, seed, device, lambda v: convert_floats(v, HALF_TO_FP32)), "float32"
    except Exception:
        raise first from None


def run_tf32(info: TaskInfo, case: Case, seed: int, device: str, rounding=None):
    """The reference with its fp32 matrix products and convolutions in TF32: on a GPU as torch computes
    them, on a CPU on operands passed through `rounding`. By default truncate_to_tf32, as Triton's
    `tl.dot` gives them to an NVIDIA GPU's tensor cores (the conv experts on an H200 matched it,
    docs/BENCHMARKS.md 2026-11-28); round_to_tf32 is cuBLAS's."""
    on_cuda = torch.device(device).type == "cuda"
    mode = Tf32Products(round_operands=not on_cuda, rounding=rounding or truncate_to_tf32)
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        if on_cuda:
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        out = run_reference(info, case, seed, device, mode=mode)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    return out


class Tf32Products(torch.overrides.TorchFunctionMode):
    """Counts fp32 matrix products and convolutions; on a CPU also rounds their operands to TF32."""

    def __init__(self, round_operands: bool, rounding=None):
        super().__init__()
        self.round_operands = round_operands
        self.rounding = rounding or truncate_to_tf32
        self.products = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        operands = TF32_OPERANDS.get(getattr(func, "__name__", ""))
        if operands is not None and _has_fp32(args, kwargs):
            self.products += 1
            if self.round_operands:
                positions, names = operands
                everything = "*" in names
                args = tuple(round_tree(a, self.rounding) if everything or i in positions else a
                             for i, a in enumerate(args))  # fmt: skip
                kwargs = {k: round_tree(v, self.rounding) if everything or k in names else v for k, v in kwargs.items()}
        return func(*args, **kwargs)


def _has_fp32(args, kwargs) -> bool:
    leaves = [*args, *kwargs.values()]
    while leaves:
        leaf = leaves.pop()
        if isinstance(leaf, (list, tuple)):
            leaves.extend(leaf)
        elif isinstance(leaf, torch.Tensor) and leaf.dtype == torch.float32:
            return True
    return False


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to nearest-even at TF32's 10 mantissa bits (range and specials unchanged)."""
    bits = x.contiguous().view(torch.int32)
    half = 1 << (TF32_DROPPED_BITS - 1)
    odd = (bits >> TF32_DROPPED_BITS) & 1
    rounded = (bits + (half - 1) + odd) & ~((1 << TF32_DROPPED_BITS) - 1)
    return torch.where(torch.isfinite(x), rounded.view(torch.float32), x)


def truncate_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 values with their low 13 mantissa bits dropped, as an NVIDIA tensor core reads the fp32
    operands Triton's `tl.dot` gives it (range and specials unchanged)."""
    bits = x.contiguous().view(torch.int32) & ~((1 << TF32_DROPPED_BITS) - 1)
    return torch.where(torch.isfinite(x), bits.view(torch.float32), x)


def round_tree(value, rounding=round_to_tf32):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return rounding(value)
    if isinstance(value, (list, tuple)):
        return type(value)(round_tree(v, rounding) for v in value)
    return value


def convert_floats(value, table: dict):
    """Inputs with floating tensors converted by `table` (dtype -> dtype); everything else unchanged."""
    if isinstance(value, torch.Tensor):
        return value.to(table[value.dtype]) if value.dtype in table else value
    if isinstance(value, (list, tuple)):
        return type(value)(convert_floats(v, table) for v in value)
    if isinstance(value, dict):
        return {k: convert_floats(v, table) for k, v in value.items()}
    return value


def cast_like(value, like):
    """`value` with each tensor leaf in the dtype of the matching leaf of `like` (the judge's reference)."""
    if isinstance(value, torch.Tensor) and isinstance(like, torch.Tensor):
        if value.is_complex() and not like.is_complex():
            return value
        return value.to(like.dtype)
    if isinstance(value, (list, tuple)) and isinstance(like, (list, tuple)) and len(value) == len(like):
        return type(value)(cast_like(v, w) for v, w in zip(value, like, strict=True))
    if isinstance(value, dict) and isinstance(like, dict) and set(value) == set(like):
        return {k: cast_like(value[k], like[k]) for k in value}
    if isinstance(value, float) and isinstance(like, float):
        return value
    return value


def dtypes_of(value) -> set[str]:
    if isinstance(value, torch.Tensor):
        return {str(value.dtype).removeprefix("torch.")}
    if isinstance(value, (list, tuple)):
        return set().union(*(dtypes_of(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(dtypes_of(v) for v in value.values())) if value else set()
    return set()


# ---- measuring and perturbing -------------------------------------------------------------------


def scaled(tol: Tolerance, factor: float) -> Tolerance:
    """The same rule with every allowance (defaults included) multiplied by `factor`."""
    names = set(DEFAULT_TOLERANCES) | set(tol.atol) | set(tol.rtol) | set(tol.rms_atol)
    parts = {name: tol.for_dtype(name) for name in names}
    return Tolerance(atol={n: p[0] * factor for n, p in parts.items()}, rtol={n: p[1] * factor for n, p in parts.items()},
                     rms_atol={n: p[2] * factor for n, p in parts.items()})  # fmt: skip


def error_ratio(expected, got, tol: Tolerance) -> float:
    """Largest |got - expected| / bound over all leaves: 0 exact, 1 at the edge, inf for any exact-rule difference."""
    from kbx.contract.compare import PYTHON_FLOAT_TOL

    if isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor):
        if got.shape != expected.shape or got.dtype != expected.dtype:
            return math.inf
        if not (expected.is_floating_point() or expected.is_complex()):
            return 0.0 if torch.equal(expected, got.to(expected.device)) else math.inf
        return _float_ratio(expected, got.to(expected.device), tol)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)) and len(expected) == len(got):
        return max((error_ratio(e, g, tol) for e, g in zip(expected, got, strict=True)), default=0.0)
    if isinstance(expected, dict) and isinstance(got, dict) and set(expected) == set(got):
        return max((error_ratio(expected[k], got[k], tol) for k in expected), default=0.0)
    if isinstance(expected, float) and isinstance(got, (int, float)):
        if math.isnan(expected) and math.isnan(got):
            return 0.0
        return abs(got - expected) / (PYTHON_FLOAT_TOL * (1.0 + abs(expected)))
    return 0.0 if expected == got else math.inf


def _float_ratio(expected: torch.Tensor, got: torch.Tensor, tol: Tolerance) -> float:
    from kbx.contract.compare import allowance

    if expected.numel() == 0:
        return 0.0
    dtype = str(expected.dtype).removeprefix("torch.")
    e = torch.view_as_real(expected).double() if expected.is_complex() else expected.double()
    g = torch.view_as_real(got).double() if got.is_complex() else got.double()
    same_special = (torch.isnan(e) & torch.isnan(g)) | (torch.isinf(e) & (g == e))
    if bool((~torch.isfinite(e) & ~same_special).any()) or bool((torch.isfinite(e) & ~torch.isfinite(g)).any()):
        return math.inf
    finite = torch.isfinite(e)
    if not bool(finite.any()):
        return 0.0
    err = (g - e).abs()[finite]
    bound = allowance(e, tol, dtype)[finite]
    ratio = torch.where(bound > 0, err / bound.clamp_min(torch.finfo(torch.float64).tiny),
                        torch.where(err > 0, math.inf, 0.0))  # fmt: skip
    return float(ratio.max())


def perturbation_rejected(expected, tol: Tolerance, accepts: Callable[[object], bool]) -> str:
    """"yes" if every perturbed copy of `expected` is rejected, "no" if any passes, "n/a" if none could be made."""
    perturbed = [p for kind in (spike, bias) for p in perturbations(expected, tol, kind)]
    if not perturbed:
        return "n/a"
    return "no" if any(accepts(p) for p in perturbed) else "yes"


def perturbations(value, tol: Tolerance, kind) -> list:
    """Copies of `value` with exactly one leaf perturbed by `kind`, one copy per perturbable leaf."""
    if isinstance(value, torch.Tensor):
        changed = kind(value, tol)
        return [] if changed is None else [changed]
    if isinstance(value, (list, tuple)):
        out = []
        for i, item in enumerate(value):
            for changed in perturbations(item, tol, kind):
                copy = list(value)
                copy[i] = changed
                out.append(type(value)(copy))
        return out
    if isinstance(value, dict):
        return [{**value, k: changed} for k in value for changed in perturbations(value[k], tol, kind)]
    if isinstance(value, float) and math.isfinite(value) and kind is spike:
        from kbx.contract.compare import PYTHON_FLOAT_TOL

        return [value + PERTURB_FACTOR * PYTHON_FLOAT_TOL * (1.0 + abs(value))]
    return []


def spike(e: torch.Tensor, tol: Tolerance) -> torch.Tensor | None:
    """PERTURBED_ELEMENTS elements, spread over the output, moved by PERTURB_FACTOR times their bound (integers by 1)."""
    from kbx.contract.compare import allowance

    if e.numel() == 0:
        return None
    flat = e.reshape(-1).clone()
    if e.dtype == torch.bool:
        idx = _spread(torch.arange(flat.numel()))
        flat[idx] = ~flat[idx]
        return flat.reshape(e.shape)
    if not (e.is_floating_point() or e.is_complex()):
        idx = _spread(torch.arange(flat.numel()))
        flat[idx] += 1
        return flat.reshape(e.shape)
    real = torch.view_as_real(flat) if e.is_complex() else flat.unsqueeze(-1)
    values = real[..., 0].double()
    finite = torch.isfinite(values).nonzero().reshape(-1)
    if finite.numel() == 0:
        return None
    idx = _spread(finite)
    bound = allowance(torch.view_as_real(e).double() if e.is_complex() else e.double(), tol, _name(e))
    bound = bound[..., 0].reshape(-1) if e.is_complex() else bound.reshape(-1)
    column = real[..., 0]
    column[idx] = _differ((values[idx] + PERTURB_FACTOR * bound[idx]).to(real.dtype), column[idx])
    return flat.reshape(e.shape)


def bias(e: torch.Tensor, tol: Tolerance) -> torch.Tensor | None:
    """Every element scaled by 1 + PERTURB_FACTOR * (bound at the output's rms) / rms; None for exact or all-zero outputs."""
    if e.numel() == 0 or not (e.is_floating_point() or e.is_complex()):
        return None
    values = torch.view_as_real(e).double() if e.is_complex() else e.double()
    finite = torch.isfinite(values)
    if not bool(finite.any()):
        return None
    rms = float(values[finite].square().mean().sqrt())
    if rms == 0.0:
        return None
    atol, rtol, rms_atol = tol.for_dtype(_name(e))
    relative = PERTURB_FACTOR * (atol + rtol * rms + rms_atol * rms) / rms
    if e.is_complex():
        return torch.view_as_complex(_differ((values * (1.0 + relative)).to(e.real.dtype), torch.view_as_real(e)))
    return _differ((values * (1.0 + relative)).to(e.dtype), e)


def _differ(moved: torch.Tensor, original: torch.Tensor) -> torch.Tensor:
    """`moved`, where rounding to the dtype undid a move of a nonzero finite value, one ulp away from zero instead.

    A bound below the dtype's resolution would otherwise make the "wrong" output equal the right one.
    """
    undone = (moved == original) & (original != 0) & torch.isfinite(original)
    away = torch.nextafter(original, torch.where(original > 0, math.inf, -math.inf).to(original.dtype))
    return torch.where(undone, away, moved)


def _spread(candidates: torch.Tensor) -> torch.Tensor:
    count = min(PERTURBED_ELEMENTS, candidates.numel())
    last = candidates.numel() - 1
    picks = [i * last // max(count - 1, 1) for i in range(count)]
    return candidates[torch.tensor(sorted(set(picks)), dtype=torch.long, device=candidates.device)]


def _name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _judge(expected, tol: Tolerance) -> Callable[[object], bool]:
    from kbx.contract.compare import compare

    return lambda got: compare(expected, got, tol).ok
